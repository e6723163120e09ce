# Wharf's image: built from the checkout, run as an unprivileged user, its data in one volume.
# docs/operations.md ("Containers") explains the settings and compose.yaml.

FROM node:22-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 and ssh2's native parts build from source when no prebuilt binary fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
# pg_dump and pg_restore for `wharf backup` and `wharf restore` on PostgreSQL.
RUN apt-get update \
  && apt-get install -y --no-install-recommends postgresql-client \
  && rm -rf /var/lib/apt/lists/* \
  && groupadd --system wharf \
  && useradd --system --gid wharf --home-dir /data --shell /usr/sbin/nologin wharf \
  && mkdir -p /data \
  && chown wharf:wharf /data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
ENV NODE_ENV=production \
  DATA_DIR=/data \
  HOST=0.0.0.0 \
  PORT=8080 \
  SFTP_HOST=0.0.0.0 \
  FTP_HOST=0.0.0.0
USER wharf
VOLUME ["/data"]
EXPOSE 8080 2022 2121
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=1", "--heap-growing-percent=100", "dist/cli.js", "serve"]
