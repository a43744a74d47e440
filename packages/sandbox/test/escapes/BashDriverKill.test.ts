/**
 * A Bash call that kills its own driver (the process that runs its calls one after the other) or
 * its own process group. The call that did it fails with a `ChildExited` that says so; the next,
 * unrelated call succeeds, on a fresh child when the driver is gone; nothing of the dead child is
 * left running.
 */
import { afterAll, describe, expect, it } from "vitest"
import { Isolation, SandboxError, SandboxRunner } from "../../src/index.js"
import { activate, settleProcesses, source, testOptions } from "../helpers.js"

const bubblewrap = Isolation.describeIsolation(testOptions).find((layer) => layer.layer === "bubblewrap")?.active === true

const modes = [
  ...(bubblewrap ? [{ name: "in its pid namespace (bubblewrap)", bwrap: true }] : []),
  { name: "without bubblewrap", bwrap: false }
]

describe.each(modes)("a Bash tool that kills its driver, $name", ({ bwrap }) => {
  const runner = SandboxRunner.make({ ...testOptions, bubblewrap: bwrap })
  afterAll(() => runner.close())

  /** A call that runs `command` between two plain calls: its outcome, and the children of the calls around it. */
  const around = async (command: string): Promise<{ readonly outcome: unknown; readonly before: string; readonly after: string }> => {
    const code = await activate(runner, source("bash", {
      "main.sh": [
        "me=$BASHPID",
        "if [[ $(cat) == '\"kill\"' ]]; then",
        `  ${command}`,
        "fi",
        // which child ran the call
        "printf '\"%s\"\\n' \"$JITBOX_SANDBOX_CHILD\""
      ].join("\n") + "\n"
    }))
    const before = await code.invoke("plain") as string
    const outcome = await code.invoke("kill").catch((error: unknown) => error)
    const after = await code.invoke("plain") as string
    await code.dispose()
    return { outcome, before, after }
  }

  // without a pid namespace `kill -1` would reach every process of the children's uid on the
  // host, and $PPID would be the host itself
  const driverKills = [
    ...(bwrap ? ["kill -9 -1"] : []),
    "kill -9 $$",
    "kill -TERM $$; sleep 1",
    "/bin/kill -9 \"$(cut -d' ' -f4 /proc/$me/stat)\""
  ]

  for (const command of driverKills) {
    it(`\`${command}\` fails that call with ChildExited and the next call gets a fresh child`, async () => {
      const { after, before, outcome } = await around(command)
      expect(outcome).toBeInstanceOf(SandboxError.SandboxError)
      expect((outcome as SandboxError.SandboxError).reason).toBe("ChildExited")
      expect((outcome as SandboxError.SandboxError).detail).toMatch(/the tool killed its own driver/)
      expect(after).not.toBe(before)
    })
  }

  it("`kill -KILL 0` (its own process group) fails that call with ChildExited; the driver lives on", async () => {
    const { after, before, outcome } = await around("kill -KILL 0")
    expect(outcome).toBeInstanceOf(SandboxError.SandboxError)
    expect((outcome as SandboxError.SandboxError).reason).toBe("ChildExited")
    expect((outcome as SandboxError.SandboxError).detail).toMatch(/main\.sh was killed by SIGKILL/)
    expect(after).toBe(before)
  })

  if (bwrap) {
    it("`kill -9 $PPID` reaches no one: $PPID is the pid namespace's init, which ignores it", async () => {
      const { after, before, outcome } = await around("kill -9 $PPID")
      expect(outcome).toBe(before)
      expect(after).toBe(before)
    })
  }

  it("nothing of a killed driver's child is left running", async () => {
    expect(await settleProcesses(runner)).toBe(0)
  })
})
