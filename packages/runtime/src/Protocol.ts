/**
 * A protocol as data: one table per actor, each entry an operation with its `kind` (the
 * envelope's `kind`), its payload fields, its success schema and the method that calls it. From
 * the table come
 *
 * - the server (`serve`): a `Transport.Handler` over a record of small handlers, one per kind,
 *   that decodes the envelope once, runs the handler and encodes its success with the entry's
 *   schema (or answers the wire error it failed with);
 * - the requests the server decodes (`requests`), for tests and the protocol page;
 * - the client (`client`): encodes a payload with the entry's request schema (renames declared
 *   once, with `Schema.fromKey`), sends it and decodes the reply with the success schema;
 * - the method faces (`facade`, `effects`): `unloadTool(name)` on any `invoke`, so the in-process
 *   face (the handlers themselves, no hop) and the remote one (the client) are the same methods.
 *
 * Adding an operation is one table entry and one handler.
 *
 * @since 0.1.0
 */
import { ParseIssues } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Envelope from "./Envelope.js"
import { attempt, okValue } from "./internal/replies.js"
import type * as Transport from "./Transport.js"
import { ProtocolError } from "./ProtocolError.js"
import { TransportError } from "./TransportError.js"
import * as WireError from "./WireError.js"

/**
 * One operation: its payload fields (without `v` and `kind`), what it answers, the method name of
 * the faces and how that method's arguments become the payload.
 *
 * @since 0.1.0
 * @category models
 */
export interface Operation<
  Fields extends Schema.Struct.Fields = Schema.Struct.Fields,
  Success extends Schema.Schema<any, any, never> = Schema.Schema<any, any, never>,
  Method extends string = string,
  Args extends ReadonlyArray<any> = ReadonlyArray<any>
> {
  readonly payload: Fields
  readonly success: Success
  readonly method: Method
  readonly args: (...args: Args) => Schema.Struct.Type<Fields>
  /** The success is a tool's value: JSON bounded by JT-LIM-02 rather than encoded by a schema. */
  readonly value?: true | undefined
  /** The errors it answers with (default: the session's `WireError` union). */
  readonly error?: Schema.Schema<any, any, never> | undefined
}

/** A protocol: operations by kind. @since 0.1.0 @category models */
export type Table = { readonly [kind: string]: Operation<any, any, any, any> }

/** What a handler of `op` receives. @since 0.1.0 @category models */
export type Payload<Op extends Operation<any, any, any, any>> = Schema.Struct.Type<Op["payload"]>

/** What a handler of `op` answers. @since 0.1.0 @category models */
export type Success<Op extends Operation<any, any, any, any>> = Schema.Schema.Type<Op["success"]>

/** One handler per kind of `T`. @since 0.1.0 @category models */
export type Handlers<T extends Table> = {
  readonly [K in keyof T]: (payload: Payload<T[K]>, request?: Transport.ServeRequest) => Success<T[K]> | PromiseLike<Success<T[K]>>
}

/** Sends an operation of `T` and answers its success. @since 0.1.0 @category models */
export type Invoke<T extends Table> = <K extends keyof T & string>(kind: K, payload: Payload<T[K]>) => Promise<Success<T[K]>>

/** The methods of `T`, as Promises. @since 0.1.0 @category models */
export type Facade<T extends Table> = {
  readonly [K in keyof T as T[K]["method"]]: (...args: Parameters<T[K]["args"]>) => Promise<Success<T[K]>>
}

/** The methods of `T`, as Effects that fail with `E`. @since 0.1.0 @category models */
export type EffectFacade<T extends Table, E> = {
  readonly [K in keyof T as T[K]["method"]]: (...args: Parameters<T[K]["args"]>) => Effect.Effect<Success<T[K]>, E>
}

/** The methods of `T`, as Effects on a client `C`. @since 0.1.0 @category models */
export type Effects<T extends Table, C, E> = {
  readonly [K in keyof T as T[K]["method"]]: (client: C, ...args: Parameters<T[K]["args"]>) => Effect.Effect<Success<T[K]>, E>
}

/**
 * Declares a table; `const` keeps each `method` a literal, so the faces are typed by it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const table = <const T extends Table>(operations: T): T => operations

const V = Schema.Literal(Envelope.version)

const isObject = (u: unknown): u is object => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * A field that is a JSON object on the wire and `A` in code, where the receiver decodes the
 * object's fields itself (a management tool's arguments, a request policy) and names the one at
 * fault in its own error.
 *
 * @since 0.1.0
 * @category schemas
 */
export const objectOf = <A extends object>(identifier: string): Schema.Schema<A> =>
  Schema.declare((u: unknown): u is A => isObject(u), { identifier, description: "a JSON object" })

/** The request schema of each kind: `{v, kind, ...payload}`. */
export type Requests<T extends Table> = {
  readonly [K in keyof T]: Schema.Struct<{ v: typeof V; kind: Schema.Literal<[K & string]> } & T[K]["payload"]>
}

const requestsCache = new WeakMap<Table, Record<string, Schema.Schema<any, any, never>>>()

/**
 * The request schema of each kind of `t` (`{"v":2,"kind":…, …payload}`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const requests = <T extends Table>(t: T): Requests<T> => {
  let found = requestsCache.get(t)
  if (found === undefined) {
    found = Object.fromEntries(
      Object.entries(t).map(([kind, op]) => [kind, Schema.Struct({ v: V, kind: Schema.Literal(kind), ...op.payload }) as unknown as Schema.Schema<any, any, never>])
    )
    requestsCache.set(t, found)
  }
  return found as unknown as Requests<T>
}

/** A payload's wire fields, encoded with the operation's request schema (renames applied), or the `InvalidArgument` error that refuses them. */
const encodeRequest = (t: Table, kind: string, payload: unknown, subject: string): Either.Either<Record<string, unknown>, TransportError> => {
  const schema = (requests(t) as unknown as Record<string, Schema.Schema<any, any, never>>)[kind]!
  const encoded = Envelope.encoderOf(schema)({ ...(payload as object), v: Envelope.version, kind })
  return Either.isRight(encoded)
    ? Either.right(encoded.right as Record<string, unknown>)
    : Either.left(new TransportError({ reason: "InvalidArgument", subject, detail: `${kind}: ${ParseIssues.describe(encoded.left, { root: "the value" })}` }))
}

/**
 * A success as reply text: a tool's value bounded by JT-LIM-02, anything else encoded by the
 * operation's schema.
 *
 * @since 0.1.0
 * @category encoding
 */
export const reply = (op: Operation, value: unknown, what: string, subject: string): string => {
  if (op.value === true) return okValue(value, what, subject)
  const encoded = Envelope.encoderOf(op.success)(value)
  if (Either.isLeft(encoded)) {
    return Envelope.error(new ProtocolError({ reason: "Decode", subject, detail: `${what}: the answer does not encode (${ParseIssues.describe(encoded.left, { root: "the value" })})` }))
  }
  return Envelope.ok(encoded.right === undefined ? undefined : JSON.stringify(encoded.right))
}

/** Decodes a reply's value with the operation's success schema. */
const decodeSuccess = (op: Operation, value: unknown, subject: string): unknown => {
  if (op.value === true) return value
  const decoded = Envelope.decoderOf(op.success)(value)
  if (Either.isRight(decoded)) return decoded.right
  throw new ProtocolError({ reason: "Decode", subject, detail: `the reply: ${ParseIssues.describe(decoded.left, { root: "the value" })}` })
}

/** The name a failure of `payload` is reported under when what was thrown is not a wire error. */
const failureName = (kind: string, payload: Record<string, unknown>): string => {
  if (typeof payload.name === "string") return payload.name
  const request = payload.request
  if (typeof request === "object" && request !== null && typeof (request as { name?: unknown }).name === "string") {
    return (request as { name: string }).name
  }
  return kind
}

/**
 * The server of `t`: decodes each request once (a message that does not decode is answered with a
 * `ProtocolError` and runs nothing), runs its kind's handler, and answers the success or the wire
 * error it failed with.
 *
 * @since 0.1.0
 * @category servers
 */
export const serve = <T extends Table>(t: T, handlers: Handlers<T>, options?: ServeOptions): Transport.Handler => {
  const members = requests(t) as unknown as Record<string, Schema.Schema<any, any>>
  return (request) => {
    const decoded = Envelope.decodeKind(members, request.data, request.subject)
    if (Either.isLeft(decoded)) return Envelope.error(decoded.left)
    const message = decoded.right
    const kind: string = message.kind
    const expected = options?.kindOf?.(request.subject)
    if (expected !== undefined && expected !== kind) {
      return Envelope.error(new ProtocolError({ reason: "Decode", subject: request.subject, detail: `kind '${kind}' sent to '${expected}'` }))
    }
    const op = t[kind]!
    const handler = handlers[kind] as (payload: unknown, request: Transport.ServeRequest) => unknown
    const name = failureName(kind, message)
    return attempt(() => handler(message, request)).then(
      (value) => reply(op, value, `the result of '${name}'`, request.subject),
      (thrown: unknown) => failure(op, name, thrown)
    )
  }
}

/** @since 0.1.0 @category models */
export interface ServeOptions {
  /** The kind a subject carries, where the subject names the operation (`coordinator.<principal>.<op>`): another kind on it is a `ProtocolError`. */
  readonly kindOf?: ((subject: string) => string | undefined) | undefined
}

/** A failure as reply text: one of the operation's own errors, else a wire error (a tool's thrown value becomes `ToolFailure`). */
const failure = (op: Operation, name: string, thrown: unknown): string => {
  if (op.error !== undefined && Schema.is(op.error)(thrown)) {
    const encoded = Envelope.encoderOf(op.error)(thrown)
    if (Either.isRight(encoded)) return Envelope.encode("error", { error: { ...(encoded.right as object), message: messageOf(thrown) } })
  }
  return Envelope.error(WireError.fromThrown(name, thrown))
}

const messageOf = (error: unknown): string => {
  try {
    return error instanceof Error ? error.message : String(error)
  } catch {
    return "an error"
  }
}

/** Sends one request's text and answers the reply message. @since 0.1.0 @category models */
export type Send = (kind: string, payload: string) => Promise<Transport.Message>

/**
 * A reply's value on the right, or on the left the wire error it carries (decoded with `error`
 * first, when given); a reply that does not decode is a `ProtocolError` on the left.
 *
 * @since 0.1.0
 * @category decoding
 */
export const valueOf = (
  message: Transport.Message,
  subject: string,
  error?: Schema.Schema<any, any, never>
): Either.Either<unknown, WireError.WireError> => {
  const parsed = Envelope.parse(message.data, subject)
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const reply = parsed.right
  if (reply.kind === "error") {
    if (error !== undefined) {
      const decoded = Envelope.decoderOf(error)(reply.error)
      if (Either.isRight(decoded)) return Either.left(decoded.right as WireError.WireError)
    }
    return Either.left(WireError.decode(reply.error, subject))
  }
  if (reply.kind !== "ok") {
    return Either.left(new ProtocolError({ reason: "Decode", subject, detail: `kind: expected "ok" or "error", got ${JSON.stringify(reply.kind)?.slice(0, 100)}` }))
  }
  return Either.right(reply.value)
}

/**
 * The client of `t` over `send`: each operation encoded with its request schema, its reply
 * decoded with its success schema; it rejects with the wire error the server answered.
 *
 * @since 0.1.0
 * @category clients
 */
export const client = <T extends Table>(t: T, subjectOf: (kind: string) => string, send: Send): Invoke<T> =>
  ((kind: string, payload: unknown) => {
    const subject = subjectOf(kind)
    const fields = encodeRequest(t, kind, payload, subject)
    if (Either.isLeft(fields)) return Promise.reject(fields.left)
    const op = t[kind]!
    return send(kind, JSON.stringify(fields.right)).then((message) => {
      const answer = valueOf(message, subject, op.error)
      if (Either.isLeft(answer)) throw answer.left
      return decodeSuccess(op, answer.right, subject)
    })
  }) as Invoke<T>

/**
 * The in-process face of `handlers`: an operation runs its handler directly (no encoding, no
 * hop), a synchronous throw becomes a rejection.
 *
 * @since 0.1.0
 * @category clients
 */
export const local = <T extends Table>(handlers: Handlers<T>): Invoke<T> =>
  ((kind: string, payload: unknown) =>
    attempt(() => (handlers[kind] as (payload: unknown) => unknown)(payload))) as Invoke<T>

/**
 * The methods of `t` over `invoke`: `unloadTool(name)` is `invoke("unload_tool", { name })`.
 *
 * @since 0.1.0
 * @category clients
 */
export const facade = <T extends Table>(t: T, invoke: Invoke<T>): Facade<T> =>
  Object.fromEntries(
    Object.entries(t).map(([kind, op]) => [op.method, (...args: ReadonlyArray<unknown>) => invoke(kind, op.args(...args) as Payload<T[string]>)])
  ) as Facade<T>

/**
 * The methods of `t` over `invoke`, as Effects: a rejection `isFailure` accepts is the Effect's
 * failure, anything else a defect.
 *
 * @since 0.1.0
 * @category clients
 */
export const effectFacade = <T extends Table, E>(t: T, invoke: Invoke<T>, isFailure: (u: unknown) => u is E): EffectFacade<T, E> =>
  Object.fromEntries(
    Object.entries(t).map(([kind, op]) => [
      op.method,
      (...args: ReadonlyArray<unknown>) =>
        Effect.tryPromise({ try: () => invoke(kind, op.args(...args) as Payload<T[string]>), catch: (error) => error }).pipe(
          Effect.catchAll((error) => isFailure(error) ? Effect.fail(error) : Effect.die(error))
        )
    ])
  ) as EffectFacade<T, E>

/**
 * The methods of `t` as Effects on a client: `unloadTool(session, name)`. `lift` turns a Promise
 * of the client into an Effect (and says which rejections are typed failures).
 *
 * @since 0.1.0
 * @category clients
 */
export const effects = <T extends Table, C, E>(
  t: T,
  face: (client: C) => Facade<T>,
  lift: <A>(f: () => Promise<A>) => Effect.Effect<A, E>
): Effects<T, C, E> =>
  Object.fromEntries(
    Object.values(t).map((op) => [
      op.method,
      (client: C, ...args: ReadonlyArray<unknown>) => lift(() => (face(client) as Record<string, (...a: ReadonlyArray<unknown>) => Promise<unknown>>)[op.method]!(...args))
    ])
  ) as Effects<T, C, E>
