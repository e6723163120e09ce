/** How one request to a listener went, as the delivery log records it. */
export interface WebhookOutcome {
  /** Status 200 or 204 only: anything else, redirects included, is a failure. */
  success: boolean
  /** The HTTP status, or a curl-style code when `network`: 6 resolve, 7 connect, 28 timeout, 35 TLS, 52 empty reply, 56 receive. */
  status: number
  /** Short text for people: "OK", "HTTP 500 Internal Server Error", "Connection refused"… */
  message: string
  network: boolean
  /** Bytes of the response body received, counted up to 1 MiB (or Content-Length when larger). */
  responseSize: number
  /** The first 64 KiB of the response body as UTF-8 text. */
  responseBody: string
  /** `Retry-After` of a 429 or 503 in seconds (0 for a date already past), otherwise null. */
  retryAfterSeconds: number | null
  durationMs: number
}
