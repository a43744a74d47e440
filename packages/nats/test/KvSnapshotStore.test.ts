/**
 * The JetStream KV snapshot store on a real nats-server (one for this file): the snapshot store
 * suite; a snapshot larger than the server's `max_payload` stored in chunks under a small
 * manifest; history, loadRevision and rollback; chunk collection; what someone else wrote into
 * the bucket (bad JSON, a wrong schema, manifests pointing at missing, corrupt or impossible
 * chunks) read as a typed `SnapshotError`; and a session taken over by a second `Sessions` host
 * from the store with every tool.
 */
import { NatsServer } from "@jitbox/testing"
import { JitHarnessSnapshot } from "@jitbox/core"
import { Ids, MemoryTransport, Sessions, Subject } from "@jitbox/runtime"
import { Kvm, type KV } from "@nats-io/kv"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createHash, randomBytes } from "node:crypto"
import { add, twiceSource } from "../../core/test/fixtures.js"
import { conformanceSnapshot, snapshotStoreConformance } from "../../runtime/test/SnapshotStoreConformance.js"
import * as KvSnapshotStore from "../src/KvSnapshotStore.js"
import * as NatsConnection from "../src/NatsConnection.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const connection = () => ({ servers: server!.url, reconnectTimeWaitMs: 100 })
let buckets = 0
const nextBucket = () => `snapshots-test-${++buckets}`

/** A store on a connection of its own. */
const storeWith = (options: KvSnapshotStore.KvSnapshotStoreOptions) =>
  Effect.flatMap(NatsConnection.make(connection()), ({ nc }) => KvSnapshotStore.fromConnection(nc, options))

const storeOn = (bucket: string, options: Partial<KvSnapshotStore.KvSnapshotStoreOptions> = {}) => storeWith({ bucket, ...options })

/** The bucket as any NATS client sees it: for what a store never writes, and to look inside. */
const rawBucket = (bucket: string) =>
  Effect.flatMap(NatsConnection.make(connection()), ({ nc }) => Effect.promise(() => new Kvm(nc).open(bucket)))

const keysOf = (kv: KV, filter: string) =>
  Effect.promise(async () => {
    const keys: Array<string> = []
    for await (const key of await kv.keys(filter)) keys.push(key)
    return keys.sort()
  })

const sid = Ids.sessionId("s1")

/** Text that does not repeat, so no two chunks are alike. */
const noise = (chars: number) => randomBytes(Math.ceil(chars * 0.75)).toString("base64").slice(0, chars)

const withNotes = (count: number, chars: number): JitHarnessSnapshot.JitHarnessSnapshot => ({
  ...conformanceSnapshot,
  text_tools: Array.from({ length: count }, (_, index) => ({ name: `notes_${index}`, description: `Notes ${index}.`, markdown: noise(chars) })),
  unloaded_tools: []
})

const manifestOf = (fields: Record<string, unknown>) => JSON.stringify({ jitbox_chunked_snapshot: 1, ...fields })
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

snapshotStoreConformance("JetStream KV", (maxBytes) => storeOn(nextBucket(), { maxBytes }))

describe("KvSnapshotStore", () => {
  it.scoped("a snapshot larger than the server's max_payload is chunked: chunks first, a small manifest under the session's key; another connection loads it", () =>
    Effect.gen(function*() {
      const bucket = nextBucket()
      const store = yield* storeOn(bucket)
      // Six text tools of 190 000 characters: about 1.15 MB of JSON, over the default 1 MiB.
      const large = withNotes(6, 190_000)
      assert.isAbove(JitHarnessSnapshot.toJson(large).length, 1_048_576)
      yield* store.save(sid, large)
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)), large)

      const kv = yield* rawBucket(bucket)
      const manifest = (yield* Effect.promise(() => kv.get("snapshot.s1")))!
      assert.isBelow(manifest.length, 1_000)
      const chunks = (manifest.json() as { chunks: Array<string> }).chunks
      assert.strictEqual(chunks.length, 2)
      assert.deepStrictEqual(yield* keysOf(kv, "chunk.s1.*"), chunks.map((hash) => `chunk.s1.${hash}`).sort())
      // Written last: every chunk's revision (its stream sequence) is older than the manifest's.
      for (const hash of chunks) {
        assert.isBelow((yield* Effect.promise(() => kv.get(`chunk.s1.${hash}`)))!.revision, manifest.revision)
      }

      const other = yield* storeOn(bucket)
      assert.deepStrictEqual(Option.getOrThrow(yield* other.load(sid)), large)
    }))

  it.scoped("history lists the session's revisions newest first; loadRevision reads an older one; rollback stores it as the newest", () =>
    Effect.gen(function*() {
      const store = yield* storeOn(nextBucket())
      const versions = [1, 2, 3].map((n) => ({ ...conformanceSnapshot, base_tools: [`tool_${n}`] }))
      for (const version of versions) yield* store.save(sid, version)
      yield* store.save(Ids.sessionId("other"), conformanceSnapshot)
      const history = yield* store.history(sid)
      assert.strictEqual(history.length, 3)
      assert.deepStrictEqual([...history].sort((a, b) => b.revision - a.revision), history)
      for (const entry of history) assert.instanceOf(entry.createdAt, Date)
      const [third, second, first] = history
      assert.deepStrictEqual((yield* store.loadRevision(sid, first!.revision)).base_tools, ["tool_1"])
      assert.deepStrictEqual((yield* store.loadRevision(sid, second!.revision)).base_tools, ["tool_2"])

      const rolledBack = yield* store.rollback(sid, first!.revision)
      assert.isAbove(rolledBack, third!.revision)
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)).base_tools, ["tool_1"])
      assert.deepStrictEqual((yield* store.history(sid)).map((entry) => entry.revision), [rolledBack, third!.revision, second!.revision, first!.revision])

      // A revision of another key, or none at all, is no revision of this session.
      const otherRevision = (yield* store.history(Ids.sessionId("other")))[0]!.revision
      assert.strictEqual((yield* Effect.flip(store.loadRevision(sid, otherRevision))).reason, "NotFound")
      assert.strictEqual((yield* Effect.flip(store.rollback(sid, 10_000))).reason, "NotFound")
      assert.strictEqual((yield* Effect.flip(store.loadRevision(sid, 0))).reason, "Invalid")

      yield* store.remove(sid)
      assert.deepStrictEqual(yield* store.history(sid), [])
      assert.strictEqual((yield* Effect.flip(store.loadRevision(sid, first!.revision))).reason, "NotFound")
      assert.isTrue(Option.isSome(yield* store.load(Ids.sessionId("other"))))
    }))

  it.scoped("chunks no retained revision names are purged, every listed revision loads, rollback of a chunked revision works, remove leaves no key", () =>
    Effect.gen(function*() {
      const bucket = nextBucket()
      const store = yield* storeOn(bucket, { history: 2, chunkBytes: 16_384, maxBytes: 1_048_576, gcGraceMs: 0 })
      const kv = yield* rawBucket(bucket)
      const chunksAt = (revision: number) =>
        Effect.map(Effect.promise(() => kv.get("snapshot.s1", { revision })), (entry) =>
          (entry!.json() as { chunks: Array<string> }).chunks.map((hash) => `chunk.s1.${hash}`))

      const [a, b, c] = [withNotes(1, 50_000), withNotes(1, 50_000), withNotes(1, 50_000)]
      yield* store.save(sid, a!)
      const [ra] = yield* store.history(sid)
      const aChunks = yield* chunksAt(ra!.revision)
      assert.strictEqual(aChunks.length, 4)
      yield* store.save(sid, b!)
      yield* store.save(sid, c!)
      const [rc, rb] = yield* store.history(sid)
      assert.strictEqual((yield* store.history(sid)).length, 2)
      const live = [...(yield* chunksAt(rb!.revision)), ...(yield* chunksAt(rc!.revision))].sort()
      assert.deepStrictEqual(yield* keysOf(kv, "chunk.s1.*"), live)
      assert.strictEqual((yield* Effect.flip(store.loadRevision(sid, ra!.revision))).reason, "NotFound")
      assert.deepStrictEqual(yield* store.loadRevision(sid, rb!.revision), b)

      yield* store.rollback(sid, rb!.revision)
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)), b)
      assert.deepStrictEqual(yield* store.loadRevision(sid, rc!.revision), c)

      yield* store.remove(sid)
      assert.deepStrictEqual(yield* keysOf(kv, ">"), [])
      assert.isTrue(Option.isNone(yield* store.load(sid)))
    }))

  it.scoped("a chunk written within gcGraceMs of the newest revision is kept, though no revision names it", () =>
    Effect.gen(function*() {
      const bucket = nextBucket()
      const store = yield* storeOn(bucket, { history: 1, chunkBytes: 16_384, maxBytes: 1_048_576 })
      const kv = yield* rawBucket(bucket)
      yield* store.save(sid, withNotes(1, 50_000))
      yield* store.save(sid, withNotes(1, 50_000))
      // History 1: the first revision is gone, its four chunks are within the default 60 s.
      assert.strictEqual((yield* keysOf(kv, "chunk.s1.*")).length, 8)
    }))

  it.scoped("chunks of a writer that died before its manifest leave the previous snapshot loading, and a later save collects them", () =>
    Effect.gen(function*() {
      const bucket = nextBucket()
      const store = yield* storeOn(bucket, { chunkBytes: 16_384, maxBytes: 1_048_576, gcGraceMs: 0 })
      const kv = yield* rawBucket(bucket)
      yield* store.save(sid, conformanceSnapshot)
      const orphan = new TextEncoder().encode(noise(16_384))
      yield* Effect.promise(() => kv.put(`chunk.s1.${sha256(orphan)}`, orphan))
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)), conformanceSnapshot)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
      yield* store.save(sid, { ...conformanceSnapshot, unloaded_tools: [] })
      assert.deepStrictEqual(yield* keysOf(kv, "chunk.s1.*"), [])
    }))

  it.scoped("what someone else put under a session's key is a typed SnapshotError, never a crash; a save replaces it", () =>
    Effect.gen(function*() {
      const bucket = nextBucket()
      const store = yield* storeOn(bucket, { maxBytes: 1_000_000 })
      const kv = yield* rawBucket(bucket)
      const good = new TextEncoder().encode(noise(5_000))
      const goodHash = sha256(good)
      const corrupt = new TextEncoder().encode(noise(5_000))
      yield* Effect.promise(() => kv.put(`chunk.bad.${goodHash}`, corrupt))
      yield* Effect.promise(() => kv.put(`chunk.short.${goodHash}`, good.subarray(0, 4_000)))
      const cases: ReadonlyArray<readonly [string, string | Uint8Array, JitHarnessSnapshot.SnapshotError["reason"], string]> = [
        ["not JSON", "{ not json", "Invalid", "not a valid jitbox snapshot"],
        ["wrong schema", JSON.stringify({ format_version: 1, tools: "none" }), "Invalid", "tools"],
        ["not UTF-8", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), "Invalid", "UTF-8"],
        ["over maxBytes", JSON.stringify({ format_version: 1, tools: [], padding: "x".repeat(1_000_001) }), "Invalid", "at most 1000000"],
        ["missing chunks", manifestOf({ bytes: 5_000, chunk_bytes: 8_192, chunks: [goodHash] }), "NotFound", "chunk 1 of 1 is missing"],
        ["a corrupt chunk", manifestOf({ bytes: 5_000, chunk_bytes: 8_192, chunks: [goodHash] }), "Invalid", "does not match its hash"],
        ["a short chunk", manifestOf({ bytes: 5_000, chunk_bytes: 8_192, chunks: [goodHash] }), "Invalid", "is 4000 bytes, not 5000"],
        ["a huge manifest", manifestOf({ bytes: 10_000_000_000, chunk_bytes: 8_192, chunks: [goodHash] }), "Invalid", "at most 1000000"],
        ["a chunk count that does not add up", manifestOf({ bytes: 20_000, chunk_bytes: 8_192, chunks: [goodHash] }), "Invalid", "names 1 chunks"],
        ["chunk names that are no hashes", manifestOf({ bytes: 5_000, chunk_bytes: 8_192, chunks: ["../../snapshot.other"] }), "Invalid", "not a chunk manifest"],
        ["tiny chunks", manifestOf({ bytes: 5_000, chunk_bytes: 1, chunks: [goodHash] }), "Invalid", "not a chunk manifest"]
      ]
      const sessionOf: Record<string, string> = { "a corrupt chunk": "bad", "a short chunk": "short" }
      for (const [what, value, reason, says] of cases) {
        const session = Ids.sessionId(sessionOf[what] ?? what.replace(/[^a-z]/gi, "_"))
        yield* Effect.promise(() => kv.put(`snapshot.${session}`, value))
        const exit = yield* Effect.exit(store.load(session))
        assert.isTrue(Exit.isFailure(exit), what)
        const error = yield* Effect.flip(store.load(session))
        assert.strictEqual(error._tag, "SnapshotError", what)
        assert.strictEqual(error.reason, reason, `${what}: ${error.message}`)
        assert.include(error.message, says, what)
        assert.include(error.message, `kv:${bucket}/`, what)
        // Its revision reads the same, and a save (which collects chunks past the bad value) replaces it.
        const [revision] = yield* store.history(session)
        assert.strictEqual((yield* Effect.flip(store.loadRevision(session, revision!.revision))).reason, reason, what)
        yield* store.save(session, conformanceSnapshot)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load(session)), conformanceSnapshot, what)
      }
    }))

  it.scoped("bad options fail the store with SnapshotError", () =>
    Effect.gen(function*() {
      const tooSmall = yield* Effect.flip(storeOn(nextBucket(), { chunkBytes: 1_000 }))
      assert.strictEqual(tooSmall._tag, "SnapshotError")
      assert.include(tooSmall.message, "chunkBytes")
      const history = yield* Effect.flip(storeOn(nextBucket(), { history: 65 }))
      assert.include(history.message, "history")
      const noBucket = yield* Effect.flip(storeWith({}))
      assert.include(noBucket.message, "bucket or a namespace")
      const store = yield* storeWith({ namespace: "kvtest" })
      assert.strictEqual(store.bucket, "jitbox-snapshots-kvtest")
    }))

  it("the Promise face: load, save, history, rollback; a bad session id rejects with ConfigError", async () => {
    const store = await KvSnapshotStore.open({ bucket: nextBucket(), connection: connection() })
    try {
      assert.isUndefined(await store.load("s1"))
      await store.save("s1", conformanceSnapshot)
      await store.save("s1", { ...conformanceSnapshot, base_tools: [] })
      const [, first] = await store.history("s1")
      await store.rollback("s1", first!.revision)
      assert.deepStrictEqual(await store.load("s1"), conformanceSnapshot)
      const error = await store.loadRevision("s1", 999_999).then(() => undefined, (thrown: unknown) => thrown)
      assert.instanceOf(error, JitHarnessSnapshot.SnapshotError)
      const bad = await store.load("a.b").then(() => undefined, (thrown: unknown) => thrown)
      assert.strictEqual((bad as { _tag?: string })._tag, "ConfigError")
    } finally {
      await store.close()
      await store.close()
    }
  })

  it.scoped("a session taken over by a second Sessions host from the KV store has every tool, its large notes included", () =>
    Effect.gen(function*() {
      const bucket = nextBucket()
      const prefix = Subject.prefix(Ids.namespace("kvtakeover"))
      const host = (scope: Scope.Scope) =>
        Effect.flatMap(
          Layer.buildWithScope(Layer.merge(MemoryTransport.layer(), KvSnapshotStore.layer({ bucket }).pipe(Layer.provide(NatsConnection.layer(connection())))), scope),
          (context) => Sessions.make({ prefix, harness: { tools: [add] } }).pipe(Effect.provide(context), Scope.extend(scope))
        )

      const firstScope = yield* Scope.make()
      const first = yield* host(firstScope)
      const session = first.get("taken-over")
      yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
      for (let index = 0; index < 6; index++) {
        yield* Effect.promise(() => session.createTool({ kind: "text", name: `notes_${index}`, description: `Notes ${index}.`, source: noise(190_000) }))
      }
      yield* Effect.promise(() => session.unloadTool("notes_5"))
      const before = yield* Effect.promise(() => session.snapshot())
      const catalog = yield* Effect.promise(() => session.listTools())
      yield* Scope.close(firstScope, Exit.void)

      const kv = yield* rawBucket(bucket)
      assert.isAbove((yield* keysOf(kv, "chunk.taken-over.*")).length, 1)

      const second = yield* host(yield* Effect.scope)
      const taken = second.get("taken-over")
      assert.strictEqual(yield* Effect.promise(() => taken.callTool("twice", { value: 21 })), 42)
      assert.deepStrictEqual(yield* Effect.promise(() => taken.snapshot()), before)
      assert.deepStrictEqual(yield* Effect.promise(() => taken.listTools()), catalog)
      assert.deepStrictEqual(
        (yield* Effect.promise(() => taken.listTools())).map((entry) => entry.name).sort(),
        ["add", "notes_0", "notes_1", "notes_2", "notes_3", "notes_4", "notes_5", "twice"]
      )
    }))
})
