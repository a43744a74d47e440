/**
 * The multi-agent example's namespace over NATS: a nats-server (from PATH, JetStream in a
 * temporary directory), a coordinator and two workers as `jitbox` processes, the agents' session
 * host in this process (code runs on the workers) with the catalog in JetStream KV, and the
 * operator's approvals made by the `jitbox catalog approve` command.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { KvCatalog, NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, RemoteCodeRunner, Sessions, SnapshotStore, Subject } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type { AgentsNamespace } from "./agentsNamespace.js"
import { namespaceName, profile } from "./agentsNamespace.js"
import { jitbox, type JitboxProcess } from "./jitboxProcess.js"

const stopAll = async (processes: ReadonlyArray<JitboxProcess>): Promise<void> => {
  for (const process_ of processes) process_.child.kill("SIGTERM")
  await Promise.all(processes.map((process_) => process_.exited))
}

const hostSessions = async (url: string, scope: Scope.Scope) => {
  const prefix = Subject.prefix(Ids.namespace(namespaceName))
  const connection = NatsConnection.layer({ servers: url, name: "jitbox-demo-agents" })
  const context = await Effect.runPromise(
    Layer.buildWithScope(
      Layer.provideMerge(
        RemoteCodeRunner.layer({ prefix }),
        Layer.mergeAll(NatsTransport.layer.pipe(Layer.provide(connection)), SnapshotStore.layerMemory(), connection)
      ),
      scope
    )
  )
  const catalog = await Effect.runPromise(KvCatalog.make({ namespace: namespaceName }).pipe(Effect.provide(context)))
  const sessions = await Effect.runPromise(
    Sessions.make({ prefix, harness: { codeExecution: "sandboxed", catalog }, admission: { profile: profile.name, deploymentConsent: true }, activation: false })
      .pipe(Effect.provide(context), Scope.extend(scope))
  )
  return { catalog, sessions }
}

export const natsNamespace = async (): Promise<AgentsNamespace> => {
  const server = await NatsServer.start()
  const directory = await mkdtemp(join(tmpdir(), "jitbox-agents-"))
  const scope = Effect.runSync(Scope.make())
  const processes: Array<JitboxProcess> = []
  const close = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await stopAll(processes)
    await server.close()
    await rm(directory, { recursive: true, force: true })
  }
  try {
    const profiles = join(directory, "profiles.json")
    await writeFile(profiles, JSON.stringify({ profiles: [profile] }))
    const env = { JITBOX_SERVER: server.url, JITBOX_NAMESPACE: namespaceName }
    processes.push(jitbox("coordinator", ["coordinator", "--profiles", profiles], env))
    for (const id of ["worker-a", "worker-b"]) processes.push(jitbox(id, ["worker", "--id", id], env))
    await Promise.all(processes.map((process_) => process_.ready))
    const { catalog, sessions } = await hostSessions(server.url, scope)
    const approve = async (name: string, version: string): Promise<void> => {
      const operator = jitbox("operator", ["catalog", "approve", name, version], env)
      const code = await operator.exited
      if (code !== 0) throw new Error(`jitbox catalog approve ${name} ${version} exited ${code}`)
    }
    return { name: namespaceName, catalog, sessions, approve, close }
  } catch (error) {
    await close()
    throw error
  }
}
