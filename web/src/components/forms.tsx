import type { ComponentChildren, InputHTMLAttributes, Ref } from 'preact'
import { useState } from 'preact/hooks'
import { useFocusWhen } from './focus'

/**
 * A form's submission: busy while it runs (so the button cannot send it twice), and the error it
 * ended with, kept to show next to the form.
 */
export function useSubmit(action: () => Promise<void>) {
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await action()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return { error, busy, submit }
}

type FieldProps = {
  type?: 'text' | 'email' | 'password' | 'search' | 'date'
  name?: string
  required?: boolean
  disabled?: boolean
  minLength?: number
  maxLength?: number
  autocomplete?: string
  placeholder?: string
  'aria-describedby'?: string
  /** The visible label: the input sits inside it, so screen readers name the input by it. */
  label: ComponentChildren
  value: string
  onValue: (value: string) => void
  inputRef?: Ref<HTMLInputElement>
  /** A class for the label, e.g. `grow`. */
  labelClass?: string
}

/** A labelled text input. */
export function Field({ label, value, onValue, inputRef, labelClass, ...input }: FieldProps) {
  return (
    <label class={labelClass}>
      {label}
      <input
        ref={inputRef}
        // Preact types each input type apart; these attributes are valid for all the types allowed above.
        {...(input as InputHTMLAttributes<HTMLInputElement>)}
        value={value}
        onInput={(e) => onValue(e.currentTarget.value)}
      />
    </label>
  )
}

/**
 * A labelled password input: `current` for a password the user already has (browsers fill it in),
 * otherwise a new one (browsers may suggest one).
 */
export function PasswordField({ current, ...props }: FieldProps & { current?: boolean }) {
  return <Field type="password" autocomplete={current ? 'current-password' : 'new-password'} {...props} />
}

/** A labelled checkbox, the box before its words. */
export function Checkbox({
  label,
  checked,
  disabled,
  onChecked,
}: {
  label: ComponentChildren
  checked: boolean
  disabled?: boolean
  onChecked: (checked: boolean) => void
}) {
  return (
    <label class="inline">
      <input
        type="checkbox"
        checked={checked}
        disabled={disabled}
        onChange={(e) => onChecked(e.currentTarget.checked)}
      />
      {label}
    </label>
  )
}

/** A form's submit button, saying so while it works, and the Cancel button next to it. */
export function SubmitOrCancel({
  busy,
  label,
  busyLabel,
  danger,
  onCancel,
}: {
  busy: boolean
  label: string
  busyLabel: string
  danger?: boolean
  onCancel: () => void
}) {
  return (
    <div class="actions">
      <button type="submit" class={danger ? 'danger' : undefined} disabled={busy}>
        {busy ? busyLabel : label}
      </button>
      <button type="button" class="secondary" onClick={onCancel}>
        Cancel
      </button>
    </div>
  )
}

/**
 * A destructive action's "are you sure": the question, a danger button that does it and "Keep
 * it", which takes the focus when the question appears (so Enter never confirms by accident).
 */
export function ConfirmAction(props: {
  question: ComponentChildren
  yes: string
  busy: boolean
  onYes: () => void
  onKeep: () => void
}) {
  const keepRef = useFocusWhen<HTMLButtonElement>(true)
  return (
    <fieldset class="confirm">
      <legend>{props.question}</legend>
      <button type="button" class="danger" disabled={props.busy} onClick={props.onYes}>
        {props.yes}
      </button>
      <button type="button" class="secondary" ref={keepRef} disabled={props.busy} onClick={props.onKeep}>
        Keep it
      </button>
    </fieldset>
  )
}
