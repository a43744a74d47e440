/**
 * A namespace's shared tool catalog (`SharedCatalogShape` of @jitbox/core) in a NATS JetStream KV
 * bucket (`@nats-io/kv`), `jitbox-catalog-<namespace>` by default: what sessions on every host
 * publish to and load from, and what the operator reviews (`jitbox catalog`).
 *
 * Its keys, each written by the principal that owns it (so that the server's permissions can let
 * session hosts publish but only the operator approve and revoke, see `Authorization`):
 *
 * - `entry.<name>.<version_id>`: the published `PublishedTool` (JSON, at most `maxEntryBytes`),
 *   written once by the publishing session host;
 * - `pkg.<version_id>`: the version's `CatalogPackage` (kept once it reads back checked); one larger than a
 *   message (the server's `max_payload`) is stored in chunks `pkg.<version_id>.<sha256>` under a
 *   manifest written last;
 * - `review.<name>.<version_id>`: `{status, by, at, entry_sha256}`, the operator's approval or
 *   revocation of the entry whose stored bytes have that SHA-256. An entry's status is its
 *   review's, else `proposed` (also when the entry was rewritten after its review). A revoked
 *   version is not approved again. With `approveOnPublish` the publisher writes an approved review
 *   as it publishes (its principal must be allowed to).
 *
 * Everything read is decoded with its schema and bounded; a package whose content address is not
 * its version id is `CatalogError` Tampered (the loading harness checks it again). `watch` follows
 * the reviews (a KV watch of `review.>`): it reports each entry whose review changes after the
 * call (a review written while the watch starts is reported when its `at` is not earlier than the
 * call, by this process's clock). A failure to reach the bucket is `CatalogError` NoCatalog.
 *
 * @since 0.1.0
 */
import { SharedCatalog } from "@jitbox/core"
import { type KV, Kvm } from "@nats-io/kv"
import type { NatsConnection as NatsClient } from "@nats-io/transport-node"
import * as Effect from "effect/Effect"
import * as CatalogPackages from "./internal/catalogPackages.js"
import * as Records from "./internal/catalogRecords.js"
import { catalogIo } from "./internal/catalogRecords.js"
import { isConflict } from "./internal/kvErrors.js"
import * as CatalogWatch from "./internal/catalogWatch.js"
import { openScoped } from "./internal/promise.js"
import * as NatsConnection from "./NatsConnection.js"

/** @since 0.1.0 @category models */
export interface KvCatalogOptions {
  /** The deployment's namespace: the bucket is `jitbox-catalog-<namespace>` unless `bucket` is given. */
  readonly namespace?: string | undefined
  /** The bucket (letters, digits, `_` and `-`); one of `bucket` and `namespace` is required. */
  readonly bucket?: string | undefined
  /** Create the bucket when it does not exist (default true; the operator, who may not create it, opens it with false). */
  readonly create?: boolean | undefined
  /** Replicas of the bucket's stream in a cluster, when this catalog creates it (default 1). */
  readonly replicas?: number | undefined
  /** Proposals are approved as they are published: the publisher writes the approving review. */
  readonly approveOnPublish?: boolean | undefined
  /** The largest entry read or written (default 256 KiB, and at most a message). */
  readonly maxEntryBytes?: number | undefined
  /** The largest package read or written (default 16 MiB). */
  readonly maxPackageBytes?: number | undefined
  /** The most versions `entries` lists (default 10 000). */
  readonly maxEntries?: number | undefined
  readonly now?: (() => number) | undefined
}

/** @since 0.1.0 @category models */
export interface KvCatalogShape extends SharedCatalog.SharedCatalogShape {
  readonly bucket: string
}

/** The default bucket of a namespace. @since 0.1.0 @category constructors */
export const bucketOf = (namespace: string): string => `jitbox-catalog-${namespace}`

/** @since 0.1.0 @category constants */
export const defaults = {
  maxEntryBytes: 256 * 1_024,
  maxPackageBytes: 16 * 1_048_576,
  maxEntries: 10_000,
  /** Kept free of a message for its headers. */
  headroomBytes: 4_096,
  /** Revisions kept per key: a review's earlier reviews stay readable for a while. */
  history: 8
} as const

/** What `fromBucket` needs besides the bucket. @since 0.1.0 @category models */
export interface BucketOptions {
  readonly bucket: string
  /** The largest value one message holds. */
  readonly maxMessageBytes: number
  readonly approveOnPublish?: boolean | undefined
  readonly maxEntryBytes?: number | undefined
  readonly maxPackageBytes?: number | undefined
  readonly maxEntries?: number | undefined
  readonly now?: (() => number) | undefined
}

const token = /^[A-Za-z0-9_-]{1,128}$/

/** `name` and `versionId` as key tokens, or `CatalogError` Invalid. */
const checkKey = (name: string, versionId?: string): void => {
  if (!token.test(name)) throw Records.invalid(name, "a catalog name is letters, digits, \"_\" and \"-\"")
  if (versionId !== undefined && !token.test(versionId)) throw Records.invalid(name, `version id ${JSON.stringify(versionId)} is not a key token`)
}

const notFound = (name: string, versionId: string | undefined) =>
  new SharedCatalog.CatalogError({ name, reason: "NotFound", detail: versionId === undefined ? "no approved version in the catalog" : `no version ${versionId} in the catalog` })

/** What every operation of a catalog works with. */
interface Context {
  readonly kv: KV
  readonly bucket: string
  readonly now: () => number
  readonly approveOnPublish: boolean
  readonly maxEntryBytes: number
  readonly maxEntries: number
  readonly limits: CatalogPackages.Limits
}

const stored = async (ctx: Context, name: string, versionId: string): Promise<Records.StoredEntry | undefined> => {
  const record = await ctx.kv.get(Records.entryKey(name, versionId))
  return record === null || record.operation !== "PUT" ? undefined : Records.readEntry(record, ctx.maxEntryBytes)
}

const reviewRecord = (ctx: Context, name: string, versionId: string) => ctx.kv.get(Records.reviewKey(name, versionId))

/** The entry with its review. */
const current = async (ctx: Context, name: string, versionId: string): Promise<SharedCatalog.PublishedTool> => {
  const [found, review] = await Promise.all([stored(ctx, name, versionId), reviewRecord(ctx, name, versionId)])
  if (found === undefined) throw notFound(name, versionId)
  return Records.withReview(found, Records.readReview(review))
}

/** Writes the entry's review: a new one, or the one after `revision` (compare-and-set). */
const writeReview = async (ctx: Context, entry: Records.StoredEntry, status: Records.Review["status"], by: string, revision: number | undefined) => {
  const review: Records.Review = { status, by, at: ctx.now(), entry_sha256: entry.sha256 }
  const key = Records.reviewKey(entry.entry.name, entry.entry.version_id)
  const value = JSON.stringify(review)
  await (revision === undefined ? ctx.kv.create(key, value) : ctx.kv.update(key, value, revision))
  return Records.withReview(entry, review)
}

const publish = (ctx: Context, entry: SharedCatalog.PublishedTool, pkg: SharedCatalog.CatalogPackage) =>
  catalogIo(ctx.bucket, Records.entryKey(entry.name, entry.version_id), "cannot publish", async () => {
    checkKey(entry.name, entry.version_id)
    if (pkg.version_id !== entry.version_id || SharedCatalog.contentAddress(pkg) !== entry.version_id) {
      throw new SharedCatalog.CatalogError({ name: entry.name, reason: "Tampered", detail: `the package published for ${entry.version_id} is not the content it names` })
    }
    if ((await stored(ctx, entry.name, entry.version_id)) !== undefined) return current(ctx, entry.name, entry.version_id)
    const bytes = new TextEncoder().encode(JSON.stringify({ ...entry, status: "proposed", reviewed: null }))
    if (bytes.length > ctx.maxEntryBytes) throw Records.invalid(entry.name, `the entry is ${bytes.length} bytes; this catalog stores at most ${ctx.maxEntryBytes}`)
    await CatalogPackages.write(ctx.kv, ctx.bucket, pkg, ctx.limits)
    // a concurrent publication of the same version may have written it first
    await ctx.kv.create(Records.entryKey(entry.name, entry.version_id), bytes).catch(async (error: unknown) => {
      if ((await stored(ctx, entry.name, entry.version_id)) === undefined) throw error
    })
    const written = await stored(ctx, entry.name, entry.version_id)
    if (!ctx.approveOnPublish || written === undefined) return current(ctx, entry.name, entry.version_id)
    return writeReview(ctx, written, "approved", entry.provenance.principal, undefined).catch(() => current(ctx, entry.name, entry.version_id))
  })

/** Entries read at once by `entries`. */
const listConcurrency = 16

const entries = (ctx: Context, name?: string) => {
  const filter = name === undefined ? "entry.>" : `entry.${name}.*`
  return catalogIo(ctx.bucket, filter, "cannot list", async () => {
    if (name !== undefined) checkKey(name)
    const keys = await Records.keysOf(ctx.kv, filter, ctx.maxEntries)
    const found: Array<SharedCatalog.PublishedTool> = []
    for (let start = 0; start < keys.length; start += listConcurrency) {
      const batch = keys.slice(start, start + listConcurrency).flatMap((key) => {
        const parts = Records.partsOf(key)
        // what does not decode is no entry of this catalog's
        return parts === undefined ? [] : [current(ctx, parts.name, parts.versionId).catch(() => undefined)]
      })
      for (const entry of await Promise.all(batch)) if (entry !== undefined) found.push(entry)
    }
    return found.sort((a, b) => b.provenance.published_at - a.provenance.published_at)
  })
}

const review = (ctx: Context, name: string, versionId: string, status: "approved" | "revoked", by: string) =>
  catalogIo(ctx.bucket, Records.reviewKey(name, versionId), "cannot review", async () => {
    checkKey(name, versionId)
    for (let attempt = 0; ; attempt++) {
      const [found, record] = await Promise.all([stored(ctx, name, versionId), reviewRecord(ctx, name, versionId)])
      if (found === undefined) throw notFound(name, versionId)
      if (Records.withReview(found, Records.readReview(record)).status === "revoked" && status === "approved") {
        throw new SharedCatalog.CatalogError({ name, reason: "Revoked", detail: `version ${versionId} was revoked and cannot be approved again` })
      }
      const written = await writeReview(ctx, found, status, by, record?.revision).catch((error: unknown) =>
        attempt < 4 && isConflict(error) ? undefined : Promise.reject(error)
      )
      if (written !== undefined) return written
    }
  })

const newestApproved = (ctx: Context, name: string, versionId: string | undefined) =>
  catalogIo(ctx.bucket, Records.entryKey(name, versionId ?? "*"), "cannot read", async () => {
    checkKey(name, versionId)
    if (versionId !== undefined) return current(ctx, name, versionId)
    const approved = (await entries(ctx, name)).find((entry) => entry.status === "approved")
    if (approved === undefined) throw notFound(name, undefined)
    return approved
  })

/**
 * The catalog over an open bucket.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBucket = (kv: KV, options: BucketOptions): KvCatalogShape => {
  const ctx: Context = {
    kv,
    bucket: options.bucket,
    now: options.now ?? Date.now,
    approveOnPublish: options.approveOnPublish === true,
    maxEntryBytes: Math.min(options.maxEntryBytes ?? defaults.maxEntryBytes, options.maxMessageBytes),
    maxEntries: options.maxEntries ?? defaults.maxEntries,
    limits: { maxBytes: options.maxPackageBytes ?? defaults.maxPackageBytes, chunkBytes: options.maxMessageBytes }
  }
  return {
    bucket: options.bucket,
    publish: (entry, pkg) => publish(ctx, entry, pkg),
    entries: (name) => entries(ctx, name),
    entry: (name, versionId) => newestApproved(ctx, name, versionId),
    package: (versionId) => catalogIo(ctx.bucket, `pkg.${versionId}`, "cannot read", async () => {
      checkKey(versionId)
      return CatalogPackages.read(kv, ctx.bucket, versionId, ctx.limits)
    }),
    review: (name, versionId, status, by) => review(ctx, name, versionId, status, by),
    watch: (listener) => CatalogWatch.watch(kv, { since: ctx.now(), entry: (name, versionId) => current(ctx, name, versionId), listener })
  }
}

const checkBucket = (options: KvCatalogOptions): string => {
  const bucket = options.bucket ?? (options.namespace === undefined ? undefined : bucketOf(options.namespace))
  if (bucket === undefined) throw Records.invalid("bucket", "a KV catalog needs a bucket or a namespace")
  if (!/^[-\w]+$/.test(bucket)) throw Records.invalid(bucket, "a bucket name is letters, digits, \"_\" and \"-\"")
  return bucket
}

/** Until the server's `INFO` says otherwise: the nats-server default. */
const defaultMaxPayload = 1_048_576

/**
 * Opens (or, with `create`, creates) the bucket on an open connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConnection = (nc: NatsClient, options: KvCatalogOptions): Effect.Effect<KvCatalogShape, SharedCatalog.CatalogError> =>
  Effect.tryPromise({
    try: async () => {
      const bucket = checkBucket(options)
      const kv = await catalogIo(bucket, "", "cannot open the KV bucket", () =>
        options.create === false
          ? new Kvm(nc).open(bucket)
          : new Kvm(nc).create(bucket, { history: defaults.history, replicas: options.replicas ?? 1 }))
      const status = await catalogIo(bucket, "", "cannot read the bucket's status (is there a catalog in this namespace yet?)", () => kv.status())
      const maxMessage = Math.min(nc.info?.max_payload ?? defaultMaxPayload, status.maxValueSize > 0 ? status.maxValueSize : Infinity)
      return fromBucket(kv, { ...options, bucket, maxMessageBytes: maxMessage - defaults.headroomBytes })
    },
    catch: (error) => error instanceof SharedCatalog.CatalogError ? error : Records.invalid("bucket", String(error))
  })

/**
 * The catalog on the process's `NatsConnection`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: KvCatalogOptions): Effect.Effect<KvCatalogShape, SharedCatalog.CatalogError, NatsConnection.NatsConnection> =>
  Effect.flatMap(NatsConnection.NatsConnection, ({ nc }) => fromConnection(nc, options))

/** A catalog on a connection of its own, for async code. @since 0.1.0 @category models */
export interface Handle extends KvCatalogShape {
  /** Closes the connection; safe to call twice. */
  readonly close: () => Promise<void>
}

/**
 * Opens the catalog on a connection of its own (`SharedCatalogShape`, to give a `JitHarness` as
 * its `catalog`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = async (options: KvCatalogOptions & { readonly connection: NatsConnection.NatsConnectionOptions }): Promise<Handle> => {
  const { close, value } = await openScoped(Effect.flatMap(NatsConnection.make(options.connection), ({ nc }) => fromConnection(nc, options)))
  return { ...value, close }
}
