/**
 * The ids and names the runtime addresses things by. Each is a branded string whose schema makes
 * it safe as one token of a NATS subject: one to 128 characters (a namespace: 64) of ASCII
 * letters, digits, `_` and `-`. That excludes what NATS gives a meaning (`.` separates tokens,
 * `*` and `>` are wildcards, whitespace ends a subject, a leading `$` marks system subjects) and
 * keeps every id usable as a JetStream KV key and in a NATS permission. A bad id is a core
 * `HarnessError.ConfigError` naming the option, raised where the id is made, never a subject that
 * means something else.
 *
 * Call, invocation and lease ids are generated here: a 96-bit random prefix drawn once per
 * generator plus a counter, so ids are unique across processes without coordination and cheap to
 * make on the hot path.
 *
 * @since 0.1.0
 */
import { HarnessError, ParseIssues } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** The characters a token may hold. @since 0.1.0 @category constants */
export const tokenPattern = /^[A-Za-z0-9_-]+$/

/** @since 0.1.0 @category constants */
export const maxIdLength = 128

/** @since 0.1.0 @category constants */
export const maxNamespaceLength = 64

const describeBadCharacters = (input: string): string => {
  const bad = new Set<string>()
  for (const character of input) if (!tokenPattern.test(character)) bad.add(character)
  return [...bad].slice(0, 5).map((character) =>
    /\s/.test(character) ? "whitespace" : JSON.stringify(character)
  ).join(", ")
}

/**
 * Whether `input` is a token of at most `maxLength` characters: what the id schemas accept, as a
 * plain check (for a hand decoder on the hot path).
 *
 * @since 0.1.0
 * @category guards
 */
export const isTokenText = (input: string, maxLength: number = maxIdLength): boolean =>
  input.length > 0 && input.length <= maxLength && tokenPattern.test(input)

const tokenCheck = (what: string, maxLength: number) => (input: string): true | string => {
  if (input.length === 0) return `${what} is empty`
  if (input.length > maxLength) return `${what} is ${input.length} characters long; at most ${maxLength} are allowed`
  if (!tokenPattern.test(input)) {
    return `${what} ${JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input)} holds ${describeBadCharacters(input)}: ` +
      `it becomes one token of a subject, so only ASCII letters, digits, "_" and "-" are allowed (no ".", "*", ">" or whitespace)`
  }
  return true
}

const tokenSchema = <const B extends string>(brand: B, what: string, maxLength: number) =>
  Schema.String.pipe(
    Schema.filter(tokenCheck(what, maxLength), { identifier: brand }),
    Schema.brand(brand)
  )

/** One subject token: an operation, an event name, a version id. @since 0.1.0 @category schemas */
export const Token = tokenSchema("Token", "a subject token", maxIdLength)
/** @since 0.1.0 @category models */
export type Token = typeof Token.Type

/** A session (one harness). @since 0.1.0 @category schemas */
export const SessionId = tokenSchema("SessionId", "a session id", maxIdLength)
/** @since 0.1.0 @category models */
export type SessionId = typeof SessionId.Type

/** A worker process. @since 0.1.0 @category schemas */
export const WorkerId = tokenSchema("WorkerId", "a worker id", maxIdLength)
/** @since 0.1.0 @category models */
export type WorkerId = typeof WorkerId.Type

/** One invocation of a code tool on a worker. @since 0.1.0 @category schemas */
export const InvocationId = tokenSchema("InvocationId", "an invocation id", maxIdLength)
/** @since 0.1.0 @category models */
export type InvocationId = typeof InvocationId.Type

/** One call of a tool, as the session's table of live calls knows it. @since 0.1.0 @category schemas */
export const CallId = tokenSchema("CallId", "a call id", maxIdLength)
/** @since 0.1.0 @category models */
export type CallId = typeof CallId.Type

/** A budget lease granted by the coordinator. @since 0.1.0 @category schemas */
export const LeaseId = tokenSchema("LeaseId", "a lease id", maxIdLength)
/** @since 0.1.0 @category models */
export type LeaseId = typeof LeaseId.Type

/** A deployment's namespace: the second token of every subject (`jitbox.<namespace>…`). @since 0.1.0 @category schemas */
export const Namespace = tokenSchema("Namespace", "a namespace", maxNamespaceLength)
/** @since 0.1.0 @category models */
export type Namespace = typeof Namespace.Type

/**
 * A principal: who asks the coordinator, the NATS user of the asker (`jitbox auth config` names
 * one user per principal). It is the second-to-last token of a coordinator subject
 * (`<prefix>.coordinator.<principal>.<op>`), so NATS permissions decide who may send as whom.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Principal = tokenSchema("Principal", "a principal", maxIdLength)
/** @since 0.1.0 @category models */
export type Principal = typeof Principal.Type

/**
 * A worker pool. `package` is refused: `worker.package.<version>` is the subject packages are
 * fetched on, and a pool of that name would put its invocations under the same wildcard.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PoolName = Schema.String.pipe(
  Schema.filter(tokenCheck("a worker pool name", maxIdLength), { identifier: "PoolName" }),
  Schema.filter((input) => input !== "package" || `"package" is reserved: worker.package.<version> is where packages are fetched`),
  Schema.brand("PoolName")
)
/** @since 0.1.0 @category models */
export type PoolName = typeof PoolName.Type

/** A schema of one of the ids above. @since 0.1.0 @category models */
export type IdSchema<A> = Schema.Schema<A, string>

const firstMessage = (error: ParseResult.ParseError): string => ParseIssues.issues(error)[0]?.message ?? error.message

/**
 * Decodes an id; a bad one fails with `ConfigError` naming `option`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const decode = <A>(schema: IdSchema<A>, option: string) => {
  const decodeEither = Schema.decodeUnknownEither(schema)
  return (input: unknown): Effect.Effect<A, HarnessError.ConfigError> =>
    Either.match(decodeEither(input), {
      onLeft: (error) => Effect.fail(new HarnessError.ConfigError({ option, detail: firstMessage(error) })),
      onRight: Effect.succeed
    })
}

/**
 * Makes an id from a string; throws `ConfigError` naming `option` when it is not a valid token.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(schema: IdSchema<A>, option: string) => {
  const decodeEither = Schema.decodeUnknownEither(schema)
  return (input: string): A =>
    Either.getOrThrowWith(decodeEither(input), (error) => new HarnessError.ConfigError({ option, detail: firstMessage(error) }))
}

/** @since 0.1.0 @category constructors */
export const sessionId: (input: string) => SessionId = make(SessionId, "sessionId")
/** @since 0.1.0 @category constructors */
export const workerId: (input: string) => WorkerId = make(WorkerId, "workerId")
/** @since 0.1.0 @category constructors */
export const invocationId: (input: string) => InvocationId = make(InvocationId, "invocationId")
/** @since 0.1.0 @category constructors */
export const callId: (input: string) => CallId = make(CallId, "callId")
/** @since 0.1.0 @category constructors */
export const leaseId: (input: string) => LeaseId = make(LeaseId, "leaseId")
/** @since 0.1.0 @category constructors */
export const namespace: (input: string) => Namespace = make(Namespace, "namespace")
/** @since 0.1.0 @category constructors */
export const poolName: (input: string) => PoolName = make(PoolName, "pool")
/** @since 0.1.0 @category constructors */
export const principal: (input: string) => Principal = make(Principal, "principal")
/** The principal of a client given none, and the owner of a ledger record written before principals. @since 0.1.0 @category constants */
export const defaultPrincipal: Principal = "default" as Principal
/** @since 0.1.0 @category constructors */
export const token: (input: string) => Token = make(Token, "token")

const randomPrefix = (): string => {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(12))
  let out = ""
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0")
  return out
}

/**
 * A generator of ids `<kind>_<24 hex digits>_<counter>`: the hex digits are drawn once per
 * generator (96 random bits, so two processes collide with negligible probability) and the
 * counter makes every id of one generator distinct. Every id it makes is a valid token.
 *
 * @since 0.1.0
 * @category constructors
 */
export const generator = <A extends string>(kind: string): () => A => {
  const check = tokenCheck("an id kind", 16)(kind)
  if (check !== true) throw new HarnessError.ConfigError({ option: "kind", detail: check })
  const prefix = `${kind}_${randomPrefix()}_`
  let counter = 0
  return () => `${prefix}${(counter++).toString(36)}` as A
}

/** A new call id, unique across processes. @since 0.1.0 @category constructors */
export const newCallId: () => CallId = generator<CallId>("call")

/** A new invocation id, unique across processes. @since 0.1.0 @category constructors */
export const newInvocationId: () => InvocationId = generator<InvocationId>("inv")
