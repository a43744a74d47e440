/**
 * Every subject the runtime uses, and the only place one is spelled. A subject is built from a
 * `Prefix` (by default `jitbox.<namespace>`) and branded ids, whose schemas keep each token free
 * of `.`, `*`, `>` and whitespace, so no id can reach into another subject. The `Transport`
 * accepts only the `Subject` and `Pattern` types made here.
 *
 * | subject | listener | use |
 * |---|---|---|
 * | `<prefix>.session.<sessionId>.call` | the session actor | call a tool by name (request/reply) |
 * | `<prefix>.session.<sessionId>.manage` | the session actor | the application API (changes, snapshot, profile, errors, forget) |
 * | `<prefix>.session.<sessionId>.nested` | the session actor | a nested `harness.callTool` from code running on a worker |
 * | `<prefix>.sessions.activate` | session hosts, in one queue group | activate a session that no actor serves yet |
 * | `<prefix>.coordinator.<principal>.<op>` | the root coordinator | admission, leases, policy, asked as `<principal>` (the asker's NATS user) |
 * | `<prefix>.worker.<pool>.<language>.invoke` | workers, one queue group per (pool, language) | run one invocation |
 * | `<prefix>.node.<workerId>.<language>.invoke` | the one worker a profile pins (`sandboxNodeId`) | run one invocation, one at a time |
 * | `<prefix>.session.<sessionId>.package` | the session's `RemoteCodeRunner` | a worker fetches a code package by version, in chunks |
 * | `<prefix>.session.<sessionId>.heartbeat` | the session's `RemoteCodeRunner` | workers say which of its calls they run (published) |
 * | `<prefix>.workers.cancel` | every worker | cancel a running invocation by (session, call id) (published) |
 * | `<prefix>.events.<sessionId>` | anyone | the session's `jit_tool_*` events, a batch per turn of its host's event loop (`StreamProtocol`) |
 * | `<prefix>.profile.<sessionId>` | anyone | the session's profiling records (one per finished attempt), a batch per turn |
 * | `<prefix>.workers.capacity` | coordinators | each worker's capacity, published periodically and on change |
 * | `$SRV.<verb>[.<name>[.<id>]]` | every worker and coordinator (no queue group) | NATS service discovery (ADR-32): `PING`, `INFO`, `STATS` |
 *
 * The `$SRV` subjects are the only ones outside the prefix: NATS tooling (`nats micro ls`) asks
 * there, so they are fixed by the protocol and shared by every namespace on the server.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"
import type { CodeLanguage } from "@jitbox/core"
import type * as Brand from "effect/Brand"
import * as Ids from "./Ids.js"

/** A literal subject: what is published and requested. @since 0.1.0 @category models */
export type Subject = string & Brand.Brand<"@jitbox/runtime/Subject">

/** What is subscribed and served: a literal subject, or one with `*` / `>` wildcards. @since 0.1.0 @category models */
export type Pattern = Subject | (string & Brand.Brand<"@jitbox/runtime/Pattern">)

/** The leading tokens every subject of one deployment shares. @since 0.1.0 @category models */
export type Prefix = string & Brand.Brand<"@jitbox/runtime/Prefix">

/** The first token of the default prefix. @since 0.1.0 @category constants */
export const defaultRoot = "jitbox"

/**
 * The prefix `<root>.<namespace>`. `root` is one or more tokens joined by `.` (default `jitbox`);
 * a bad one throws `ConfigError` naming `subjectRoot`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const prefix = (namespace: Ids.Namespace, root: string = defaultRoot): Prefix => {
  const tokens = root.split(".")
  for (const token of tokens) {
    if (!Ids.tokenPattern.test(token) || token.length > Ids.maxIdLength) {
      throw new HarnessError.ConfigError({
        option: "subjectRoot",
        detail: `${JSON.stringify(root)} must be tokens of ASCII letters, digits, "_" and "-" joined by "."`
      })
    }
  }
  return `${root}.${namespace}` as Prefix
}

const subject = (value: string) => value as Subject
const pattern = (value: string) => value as Pattern

/** Tool calls to one session (request/reply). @since 0.1.0 @category subjects */
export const sessionCall = (prefix: Prefix, session: Ids.SessionId): Subject => subject(`${prefix}.session.${session}.call`)

/** The application API of one session (request/reply). @since 0.1.0 @category subjects */
export const sessionManage = (prefix: Prefix, session: Ids.SessionId): Subject => subject(`${prefix}.session.${session}.manage`)

/** Nested calls from code running on a worker back to its session, resolved by call id. @since 0.1.0 @category subjects */
export const sessionNested = (prefix: Prefix, session: Ids.SessionId): Subject => subject(`${prefix}.session.${session}.nested`)

/**
 * A code package of one session, fetched in chunks by a worker by version id (request/reply),
 * served by the session's `RemoteCodeRunner`.
 *
 * @since 0.1.0
 * @category subjects
 */
export const sessionPackage = (prefix: Prefix, session: Ids.SessionId): Subject => subject(`${prefix}.session.${session}.package`)

/** Heartbeats of the workers running a session's invocations (published). @since 0.1.0 @category subjects */
export const sessionHeartbeat = (prefix: Prefix, session: Ids.SessionId): Subject => subject(`${prefix}.session.${session}.heartbeat`)

/**
 * Where a caller asks the session hosts (in one queue group) to activate a session that nobody
 * serves: a request to `session.<sid>.call` that finds no responder is followed by one here.
 *
 * @since 0.1.0
 * @category subjects
 */
export const sessionsActivate = (prefix: Prefix): Subject => subject(`${prefix}.sessions.activate`)

/** Every subject of one session (`call`, `manage`, `nested`). @since 0.1.0 @category patterns */
export const sessionAll = (prefix: Prefix, session: Ids.SessionId): Pattern => pattern(`${prefix}.session.${session}.*`)

/**
 * One operation of the root coordinator, asked as `principal`: the principal is a token of the
 * subject, so a NATS permission on the subject decides who may ask as whom, and the coordinator
 * knows the asker from the subject alone.
 *
 * @since 0.1.0
 * @category subjects
 */
export const coordinator = (prefix: Prefix, principal: Ids.Principal, op: Ids.Token): Subject =>
  subject(`${prefix}.coordinator.${principal}.${op}`)

/** Every operation of the root coordinator, of every principal: `coordinator.*.*`. @since 0.1.0 @category patterns */
export const coordinatorAll = (prefix: Prefix): Pattern => pattern(`${prefix}.coordinator.*.*`)

/**
 * Every operation of the root coordinator asked as `principal` (`coordinator.<principal>.*`).
 *
 * @since 0.1.0
 * @category patterns
 */
export const coordinatorOf = (prefix: Prefix, principal: Ids.Principal): Pattern => pattern(`${prefix}.coordinator.${principal}.*`)

/**
 * The principal and the operation a coordinator subject carries (its second-to-last and last
 * tokens); `undefined` when the subject is not one.
 *
 * @since 0.1.0
 * @category accessors
 */
export const coordinatorParts = (value: string): { readonly principal: Ids.Principal; readonly op: string } | undefined => {
  const tokens = value.split(".")
  if (tokens.length < 4 || tokens[tokens.length - 3] !== "coordinator") return undefined
  const principal = tokens[tokens.length - 2]!
  if (!Ids.tokenPattern.test(principal) || principal.length > Ids.maxIdLength) return undefined
  return { principal: principal as Ids.Principal, op: tokens[tokens.length - 1]! }
}

/** Invocations for the workers of one pool and language (served in a queue group). @since 0.1.0 @category subjects */
export const workerInvoke = (prefix: Prefix, pool: Ids.PoolName, language: CodeLanguage): Subject =>
  subject(`${prefix}.worker.${pool}.${language}.invoke`)

/**
 * Invocations for the one worker named `nodeId` (`sandboxNodeId`, JT-HOST-04), which serves them
 * one at a time.
 *
 * @since 0.1.0
 * @category subjects
 */
export const nodeInvoke = (prefix: Prefix, nodeId: Ids.WorkerId, language: CodeLanguage): Subject =>
  subject(`${prefix}.node.${nodeId}.${language}.invoke`)

/**
 * What an invocation subject (`workerInvoke`, `nodeInvoke`) names: its namespace, a pool (`worker`)
 * or a pinned worker (`node`), and the language; `undefined` when the subject is not one.
 *
 * @since 0.1.0
 * @category accessors
 */
export const invokeParts = (
  value: string
): { readonly namespace: string; readonly kind: "worker" | "node"; readonly name: string; readonly language: string } | undefined => {
  const [namespace, kind, name, language, op] = value.split(".").slice(-5)
  if (op !== "invoke" || (kind !== "worker" && kind !== "node") || namespace === undefined || name === undefined || language === undefined) return undefined
  return { namespace, kind, name, language }
}

/** Cancels of running invocations by call id, published to every worker (each checks its own table). @since 0.1.0 @category subjects */
export const workerCancel = (prefix: Prefix): Subject => subject(`${prefix}.workers.cancel`)

/** Each worker's capacity report, published periodically and on change, read by every coordinator. @since 0.1.0 @category subjects */
export const workersCapacity = (prefix: Prefix): Subject => subject(`${prefix}.workers.capacity`)

/** The event batches of one session, to publish on. @since 0.1.0 @category subjects */
export const events = (prefix: Prefix, session: Ids.SessionId): Subject => subject(`${prefix}.events.${session}`)

/** The event batches of one session, to subscribe to. @since 0.1.0 @category patterns */
export const sessionEvents = (prefix: Prefix, session: Ids.SessionId): Pattern => pattern(`${prefix}.events.${session}`)

/** The event batches of every session of the namespace: `events.*`. @since 0.1.0 @category patterns */
export const allEvents = (prefix: Prefix): Pattern => pattern(`${prefix}.events.*`)

/** The profiling records of one session. @since 0.1.0 @category subjects */
export const profile = (prefix: Prefix, session: Ids.SessionId): Subject => subject(`${prefix}.profile.${session}`)

/** The profiling records of every session of the namespace. @since 0.1.0 @category patterns */
export const allProfiles = (prefix: Prefix): Pattern => pattern(`${prefix}.profile.*`)

/**
 * Everything in the namespace, for debugging. Not an observer's view: on NATS a subscriber of
 * `session.<sid>.call` means a request there finds a "responder", so a call to a session nobody
 * hosts times out instead of activating it. Observers subscribe `allEvents` and `allProfiles`.
 *
 * @since 0.1.0
 * @category patterns
 */
export const everything = (prefix: Prefix): Pattern => pattern(`${prefix}.>`)

/** The namespace of a prefix: its last token (a namespace holds no `.`). @since 0.1.0 @category accessors */
export const namespaceOf = (prefix: Prefix): Ids.Namespace => prefix.slice(prefix.lastIndexOf(".") + 1) as Ids.Namespace

/** The verbs of the NATS service protocol (ADR-32). @since 0.1.0 @category constants */
export const serviceVerbs = ["PING", "INFO", "STATS"] as const

/** @since 0.1.0 @category models */
export type ServiceVerb = (typeof serviceVerbs)[number]

/**
 * The first token of every subject of the NATS service protocol. `$` marks system subjects, so no
 * id can spell it (ids are tokens of letters, digits, `_` and `-`).
 *
 * @since 0.1.0
 * @category constants
 */
export const serviceApiPrefix = "$SRV"

/**
 * A discovery subject of the NATS service protocol (ADR-32): `$SRV.<verb>` asks every service,
 * `$SRV.<verb>.<name>` every instance of one service, `$SRV.<verb>.<name>.<id>` one instance. A
 * service answers all three, without a queue group, so every instance answers. Names and ids are
 * tokens, which is what the protocol allows of them (`A-Z a-z 0-9 - _`).
 *
 * @since 0.1.0
 * @category subjects
 */
export const serviceDiscovery: {
  (verb: ServiceVerb): Subject
  (verb: ServiceVerb, name: Ids.Token): Subject
  (verb: ServiceVerb, name: Ids.Token, id: Ids.Token | Ids.WorkerId): Subject
} = (verb: ServiceVerb, name?: Ids.Token, id?: Ids.Token | Ids.WorkerId): Subject => {
  if (!serviceVerbs.includes(verb)) {
    throw new HarnessError.ConfigError({ option: "verb", detail: `${JSON.stringify(verb)} is not one of ${serviceVerbs.join(", ")}` })
  }
  return subject([serviceApiPrefix, verb, ...(name === undefined ? [] : [name]), ...(id === undefined ? [] : [id])].join("."))
}

const literalSubject = /^[^\s.*>]+(\.[^\s.*>]+)*$/

/**
 * Whether `value` is a literal subject NATS accepts for publishing: non-empty tokens joined by `.`,
 * no whitespace, no wildcards. The `Transport` checks what it is given with this.
 *
 * @since 0.1.0
 * @category refinements
 */
export const isLiteral = (value: string): value is Subject => literalSubject.test(value)

/**
 * Whether `value` is a subscription pattern: non-empty tokens joined by `.`, no whitespace, where
 * `*` and `>` appear only as whole tokens and `>` only last.
 *
 * @since 0.1.0
 * @category refinements
 */
export const isPattern = (value: string): value is Pattern => {
  if (value.length === 0 || /\s/.test(value)) return false
  const tokens = value.split(".")
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!
    if (token.length === 0) return false
    if (token === ">") {
      if (i !== tokens.length - 1) return false
    } else if (token !== "*" && (token.includes("*") || token.includes(">"))) {
      return false
    }
  }
  return true
}

/**
 * Whether the literal `subject` matches `pattern` by NATS rules: `*` is exactly one token, `>` one
 * or more trailing tokens.
 *
 * @since 0.1.0
 * @category refinements
 */
export const matches = (pattern: string, subject: string): boolean => matchesTokens(pattern.split("."), subject.split("."))

/**
 * `matches` on a pattern and a subject already split into their tokens.
 *
 * @since 0.1.0
 * @category refinements
 */
export const matchesTokens = (pattern: ReadonlyArray<string>, subject: ReadonlyArray<string>): boolean => {
  for (let i = 0; i < pattern.length; i++) {
    const token = pattern[i]!
    if (token === ">") return subject.length > i
    if (i >= subject.length) return false
    if (token !== "*" && token !== subject[i]) return false
  }
  return pattern.length === subject.length
}
