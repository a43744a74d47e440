import { describe, expect, it } from "vitest"
import { exposedManagementTools, exposureFor, ModelProtocol, supportsDeferLoading } from "../src/Exposure.js"
import { instructions } from "../src/Guidance.js"
import { InspectionToolExposure } from "../src/InspectionToolExposure.js"
import { inspectionToolNames, managementToolNames, managementTools } from "../src/ManagementTools.js"

const protocols = [ModelProtocol.Responses, ModelProtocol.ChatCompletions, ModelProtocol.AnthropicMessages]
const modes = [InspectionToolExposure.Always, InspectionToolExposure.Deferred, InspectionToolExposure.Hidden]
const allNames = managementTools.map((t) => t.name)
const controlNames = managementTools.filter((t) => t.tier === "control").map((t) => t.name)
const inspectionName = new RegExp(`\\b(${[...inspectionToolNames].join("|")})\\b`)

describe("Exposure", () => {
  it("only Responses supports deferred loading", () => {
    expect(supportsDeferLoading("responses")).toBe(true)
    expect(supportsDeferLoading("chat_completions")).toBe(false)
    expect(supportsDeferLoading("anthropic_messages")).toBe(false)
  })

  describe("exposedManagementTools", () => {
    it("EXP-05 Always sends every definition, none deferred", () => {
      const tools = exposedManagementTools("always")
      expect(tools.map((t) => t.name)).toEqual(allNames)
      expect(tools.every((t) => !t.deferLoading)).toBe(true)
    })

    it("EXP-03 Deferred marks exactly the inspection tier", () => {
      const tools = exposedManagementTools("deferred")
      expect(tools.map((t) => t.name)).toEqual(allNames)
      for (const t of tools) expect(t.deferLoading, t.name).toBe(inspectionToolNames.has(t.name))
    })

    it("EXP-06 Hidden drops the inspection tier", () => {
      const tools = exposedManagementTools("hidden")
      expect(tools.map((t) => t.name)).toEqual(controlNames)
      expect(tools.every((t) => t.tier === "control" && !t.deferLoading)).toBe(true)
    })

    it("EXP-08 keeps each definition unchanged apart from the deferral flag", () => {
      for (const mode of modes) {
        for (const t of exposedManagementTools(mode)) {
          const { deferLoading: _, ...definition } = t
          expect(definition).toEqual(managementTools.find((m) => m.name === t.name))
        }
      }
    })
  })

  describe("exposureFor", () => {
    it("EXP-03 Responses in Deferred mode defers the inspection tier and says a search may be needed", () => {
      const { instructions: text, tools } = exposureFor("deferred", "responses")
      expect(tools.map((t) => t.name)).toEqual(allNames)
      for (const t of tools) expect(t.deferLoading, t.name).toBe(inspectionToolNames.has(t.name))
      expect(text).toBe(instructions("deferred", { mayDefer: true }))
      expect(text).toMatch(/tool search/)
    })

    it.each(["chat_completions", "anthropic_messages"] as const)(
      "EXP-04/12/13 %s receives every definition in Deferred mode, none deferred, and no search hint",
      (protocol) => {
        const deferred = exposureFor("deferred", protocol)
        expect(deferred.tools.map((t) => t.name)).toEqual(allNames)
        expect(deferred.tools.every((t) => !t.deferLoading)).toBe(true)
        expect(deferred.instructions).not.toMatch(/tool search/)
        expect(deferred).toEqual(exposureFor("always", protocol))
      }
    )

    it.each(protocols)("EXP-06/07 Hidden drops the inspection tier and never names it on %s", (protocol) => {
      const exposed = exposureFor("hidden", protocol)
      expect(exposed.tools.map((t) => t.name)).toEqual(controlNames)
      expect(exposed.tools.every((t) => !t.deferLoading)).toBe(true)
      expect(exposed.instructions).not.toMatch(inspectionName)
      expect(JSON.stringify(exposed.tools)).not.toMatch(inspectionName)
      expect(exposed.instructions).not.toMatch(/tool search/)
    })

    it.each(protocols)("EXP-05 Always sends every definition undeferred and names the inspection tier on %s", (protocol) => {
      const exposed = exposureFor("always", protocol)
      expect(exposed.tools.map((t) => t.name)).toEqual(allNames)
      expect(exposed.tools.every((t) => !t.deferLoading)).toBe(true)
      for (const name of inspectionToolNames) expect(exposed.instructions).toMatch(new RegExp(`\\b${name}\\b`))
      expect(exposed.instructions).not.toMatch(/tool search/)
    })

    it("EXP-08 changes no name and no definition between modes or protocols", () => {
      for (const protocol of protocols) {
        for (const mode of modes) {
          for (const t of exposureFor(mode, protocol).tools) {
            const source = managementTools.find((m) => m.name === t.name)
            expect(source, t.name).toBeDefined()
            expect(t.description).toBe(source?.description)
            expect(t.parameters).toEqual(source?.parameters)
            expect(Object.keys(t).sort()).toEqual(["deferLoading", "description", "name", "parameters"])
          }
        }
      }
    })

    it("EXP-08 / MGMT-13 keeps every management name reserved whatever is exposed", () => {
      expect([...managementToolNames]).toEqual(allNames)
      for (const protocol of protocols) {
        for (const mode of modes) {
          const exposed = exposureFor(mode, protocol)
          for (const t of exposed.tools) expect(managementToolNames.has(t.name)).toBe(true)
          expect(exposed.instructions).toMatch(/Management tool names are reserved/)
        }
      }
      expect(managementToolNames.size).toBe(11)
    })

    it("EXP-08 states the same serial scheduling and budgets in every mode", () => {
      for (const protocol of protocols) {
        for (const mode of modes) {
          const text = exposureFor(mode, protocol).instructions
          expect(text).toMatch(/one at a time/)
          expect(text).toMatch(/at most 8,000 characters of JSON/)
        }
      }
    })
  })
})
