import { type Command, InvalidArgumentError } from 'commander'
import { operatorPrincipal } from '../identity/principal.js'
import type { NewInvoiceLine, NewPayment } from '../modules/billing/billing-ledger.js'
import type { WithContainer } from './cli-lists.js'

const collect = (v: string, all: string[]) => [...all, v]

/** `--line "49.90:Storage, January"`: the amount, a colon, then the description. */
function parseLine(v: string): { amount: string; description: string } {
  const at = v.indexOf(':')
  if (at <= 0 || at === v.length - 1)
    throw new InvalidArgumentError(`--line "${v}" must be AMOUNT:DESCRIPTION, e.g. "49.90:Storage, January"`)
  return { amount: v.slice(0, at).trim(), description: v.slice(at + 1).trim() }
}

/** `--apply 12` (what invoice 12 still owes, up to what is left) or `--apply 12:20.00`. */
function parseApply(v: string): NonNullable<NewPayment['apply']>[number] {
  const m = /^(\d{1,15})(?::(.+))?$/.exec(v.trim())
  if (!m || Number(m[1]) < 1)
    throw new InvalidArgumentError(`--apply "${v}" must be INVOICE_ID or INVOICE_ID:AMOUNT, e.g. 12:20.00`)
  return { invoice_id: Number(m[1]), ...(m[2] !== undefined ? { amount: m[2].trim() } : {}) }
}

function parseId(v: string): number {
  if (!/^\d{1,15}$/.test(v.trim()) || Number(v) < 1)
    throw new InvalidArgumentError(`--id "${v}" must be a payment id, e.g. 12`)
  return Number(v)
}

/** `--prepaid-bytes`: digits only (Number() would take " " as 0 and "1e3" or "0x10" as numbers). */
function parseBytes(v: string): number {
  if (!/^\d{1,16}$/.test(v.trim()) || !Number.isSafeInteger(Number(v)))
    throw new InvalidArgumentError(`--prepaid-bytes "${v}" must be a whole number of bytes, e.g. 1073741824`)
  return Number(v)
}

/**
 * `wharf billing invoice`, `payment` and `reverse-payment`: how an operator records what the
 * read-only /invoices and /payments endpoints show. Each prints the record as the API renders it.
 */
export function registerBillingCommands(program: Command, withContainer: WithContainer): void {
  const billing = program.command('billing').description('record invoices and payments')

  billing
    .command('invoice')
    .description('record an invoice; its amount is the sum of its lines')
    .requiredOption('--currency <code>', 'ISO 4217 currency, e.g. USD')
    .requiredOption(
      '--line <amount:description>',
      'a line, e.g. "49.90:Storage, January" (repeat for more)',
      collect,
      [],
    )
    .option('--plan <name>', 'service (plan) name shown on every line')
    .option('--from <date>', 'start of the service period (ISO 8601)')
    .option('--to <date>', 'end of the service period (ISO 8601)')
    .option('--prepaid-bytes <n>', 'prepaid bytes the invoice buys (on the first line)', parseBytes)
    .option('--prepaid-bytes-expire-at <date>', 'when the prepaid bytes expire')
    .action(async (o) => {
      if (o.prepaidBytesExpireAt !== undefined && o.prepaidBytes === undefined)
        throw new InvalidArgumentError('--prepaid-bytes-expire-at needs --prepaid-bytes')
      const lines: NewInvoiceLine[] = (o.line as string[]).map((v, i) => ({
        ...parseLine(v),
        plan: o.plan,
        service_start_at: o.from,
        service_end_at: o.to,
        ...(i === 0 && o.prepaidBytes !== undefined
          ? { prepaid_bytes: o.prepaidBytes as number, prepaid_bytes_expire_at: o.prepaidBytesExpireAt }
          : {}),
      }))
      await withContainer(async (c) => {
        const id = await c.services.billingLedger.createInvoice(operatorPrincipal(c.site.id), {
          currency: o.currency,
          lines,
        })
        console.log(JSON.stringify(await c.services.billing.getInSite(c.site.id, 'invoice', id), null, 2))
      })
    })

  billing
    .command('payment')
    .description('record a payment, applied to invoices (their balances fall); over-application is refused')
    .requiredOption('--currency <code>', 'ISO 4217 currency, e.g. USD')
    .requiredOption('--amount <amount>', 'amount received, e.g. 60.00')
    .requiredOption('--method <method>', 'how it was paid, e.g. card, bank_transfer, paypal')
    .option('--payment-type <type>', 'kind of payment, e.g. visa')
    .option('--apply <invoice[:amount]>', 'apply to an invoice (repeat for more)', collect, [])
    .action(async (o) => {
      const apply = (o.apply as string[]).map(parseApply)
      await withContainer(async (c) => {
        const id = await c.services.billingLedger.recordPayment(operatorPrincipal(c.site.id), {
          currency: o.currency,
          amount: o.amount,
          method: o.method,
          payment_type: o.paymentType,
          apply,
        })
        console.log(JSON.stringify(await c.services.billing.getInSite(c.site.id, 'payment', id), null, 2))
      })
    })

  billing
    .command('reverse-payment')
    .description('reverse a payment: the invoices it settled owe again what it took off them')
    .requiredOption('--id <n>', 'the payment id', parseId)
    .action(async (o) => {
      await withContainer(async (c) => {
        await c.services.billingLedger.reversePayment(operatorPrincipal(c.site.id), o.id)
        console.log(JSON.stringify(await c.services.billing.getInSite(c.site.id, 'payment', o.id), null, 2))
      })
    })
}
