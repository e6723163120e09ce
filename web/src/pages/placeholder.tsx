import { PageTitle } from '../ui'

export function Placeholder({ title }: { title: string }) {
  return (
    <section>
      <PageTitle>{title}</PageTitle>
      <p class="muted">Coming soon.</p>
    </section>
  )
}
