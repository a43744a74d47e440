/**
 * The namespace the multi-agent example runs on: embedded (one process) or over NATS, with one
 * shared catalog and a profile that lets the models search, load and publish.
 */
import { SharedCatalog } from "@jitbox/core"
import { Embedded, type ExecutionProfile, type Sessions } from "@jitbox/runtime"

export interface AgentsNamespace {
  readonly name: string
  readonly catalog: SharedCatalog.SharedCatalogShape
  readonly sessions: Sessions.SessionsShape
  /** The operator's step: approves a published version. */
  readonly approve: (name: string, version: string) => Promise<void>
  readonly close: () => Promise<void>
}

export const namespaceName = "agents"

export const profile: ExecutionProfile.ExecutionProfileInput = {
  name: "agents",
  policy: { allowedLanguages: ["JavaScript", "Python"], sharedCatalog: "publish", maximumInvocations: 200, maximumRepairs: 4 }
}

export const embeddedNamespace = async (): Promise<AgentsNamespace> => {
  const catalog = SharedCatalog.memory()
  const runtime = await Embedded.start({ namespace: namespaceName, profiles: [profile], profile: profile.name, deploymentConsent: true, harness: { catalog } })
  const approve = async (name: string, version: string) => {
    await catalog.review(name, version, "approved", "operator")
  }
  return { name: namespaceName, catalog, sessions: runtime.sessions, approve, close: runtime.close }
}
