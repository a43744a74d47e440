/**
 * "No responders" on a subject that a jitbox process of the namespace should serve says what is
 * missing, and which command starts it: a worker for a pool and language (or the pinned worker a
 * profile names), or the namespace's coordinator. The error stays a `TransportError`
 * `NoResponders` (nothing ran); only its detail changes, so it reads the same on every hop.
 */
import type { CodeLanguage } from "@jitbox/core"
import type * as Ids from "../Ids.js"
import * as Subject from "../Subject.js"
import { TransportError } from "../TransportError.js"

const languageNames: Readonly<Record<CodeLanguage, string>> = {
  typescript: "TypeScript",
  javascript: "JavaScript",
  python: "Python",
  bash: "Bash",
  csharp: "C#"
}

const isNoResponders = (error: unknown): error is TransportError => error instanceof TransportError && error.reason === "NoResponders"

const languageName = (language: string): string => languageNames[language as CodeLanguage] ?? language

/**
 * The detail for a worker subject (`<p>.worker.<pool>.<language>.invoke`, or
 * `<p>.node.<worker id>.<language>.invoke` for a pinned worker); `undefined` for another subject.
 */
const workerHint = (subject: string): string | undefined => {
  const parts = Subject.invokeParts(subject)
  if (parts === undefined) return undefined
  const { kind, language, name, namespace } = parts
  const shown = languageName(language)
  if (kind === "worker") {
    const pool = name === "default" ? "" : ` --pool ${name}`
    return `no worker serves ${shown} in pool ${name}: start \`jitbox worker --namespace ${namespace}${pool} --languages ${language}\``
  }
  return `no worker ${name} serves ${shown} (the profile pins it): start \`jitbox worker --namespace ${namespace} --id ${name} --languages ${language}\``
}

/** `error`, or for "no responders" on a worker subject the same error saying which worker to start. */
export const noWorker = (error: unknown): unknown => {
  if (!isNoResponders(error)) return error
  const hint = workerHint(error.subject)
  return hint === undefined ? error : new TransportError({ reason: "NoResponders", subject: error.subject, detail: hint })
}

/** `error`, or for "no responders" on a coordinator subject the same error saying to start the coordinator. */
export const noCoordinator = (error: unknown, namespace: Ids.Namespace): unknown =>
  isNoResponders(error)
    ? new TransportError({
      reason: "NoResponders",
      subject: error.subject,
      detail: `no coordinator answers in namespace ${namespace}: start \`jitbox coordinator --namespace ${namespace} --profiles <file.json>\``
    })
    : error
