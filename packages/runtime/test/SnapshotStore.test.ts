/**
 * The snapshot stores: the shared suite (SnapshotStoreConformance.ts) on the memory and file
 * layers, and what only the file layer does: it writes atomically and refuses an oversized file
 * before reading it whole.
 */
import { JitHarnessSnapshot } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Ids from "../src/Ids.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import { conformanceSnapshot, snapshotStoreConformance } from "./SnapshotStoreConformance.js"

const sid = Ids.sessionId("s1")
const snapshot = conformanceSnapshot

const temporaryDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-store-"))),
  (directory) => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true }))
)

snapshotStoreConformance("memory", (maxBytes) => Effect.succeed(SnapshotStore.makeMemory({ maxBytes })))
snapshotStoreConformance("file", (maxBytes) => Effect.flatMap(temporaryDirectory, (directory) => SnapshotStore.makeFile({ directory, maxBytes })))

describe("SnapshotStore", () => {
  it.scoped("file: one JSON file per session, written atomically (no temporary file left), readable by JitHarnessSnapshot.load", () =>
    Effect.gen(function*() {
      const directory = path.join(yield* temporaryDirectory, "nested", "sessions")
      const store = yield* SnapshotStore.makeFile({ directory })
      yield* store.save(sid, snapshot)
      yield* store.save(Ids.sessionId("s-2"), snapshot)
      assert.deepStrictEqual(fs.readdirSync(directory).sort(), ["s-2.json", "s1.json"])
      assert.deepStrictEqual(yield* Effect.promise(() => JitHarnessSnapshot.load(path.join(directory, "s1.json"))), snapshot)
      // Another store over the same directory (another process, say) reads it.
      const other = yield* SnapshotStore.makeFile({ directory })
      assert.deepStrictEqual(Option.getOrThrow(yield* other.load(sid)), snapshot)
    }))

  it.scoped("file: a file over maxBytes is refused before it is read, a file that does not decode is Invalid naming it", () =>
    Effect.gen(function*() {
      const directory = yield* temporaryDirectory
      const store = yield* SnapshotStore.makeFile({ directory, maxBytes: 4_096 })
      fs.writeFileSync(path.join(directory, "big.json"), " ".repeat(1_000_000))
      const big = yield* Effect.flip(store.load(Ids.sessionId("big")))
      assert.strictEqual(big.reason, "Invalid")
      assert.include(big.detail, "1000000 bytes")
      fs.writeFileSync(path.join(directory, "bad.json"), JSON.stringify({ format_version: 1, tools: "none" }))
      const bad = yield* Effect.flip(store.load(Ids.sessionId("bad")))
      assert.strictEqual(bad.reason, "Invalid")
      assert.strictEqual(bad.path, path.join(directory, "bad.json"))
      fs.writeFileSync(path.join(directory, "deep.json"), `{"format_version":1,"tools":${"[".repeat(3_000)}${"]".repeat(3_000)}}`)
      assert.strictEqual((yield* Effect.flip(store.load(Ids.sessionId("deep")))).reason, "Invalid")
    }))

  it.scoped("file: a directory that cannot be made fails the layer with SnapshotError", () =>
    Effect.gen(function*() {
      const directory = yield* temporaryDirectory
      fs.writeFileSync(path.join(directory, "file"), "")
      const error = yield* Effect.flip(SnapshotStore.makeFile({ directory: path.join(directory, "file", "sub") }))
      assert.strictEqual(error._tag, "SnapshotError")
      assert.strictEqual(error.reason, "Io")
    }))
})
