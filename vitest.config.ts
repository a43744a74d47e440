import { defineConfig } from "vitest/config"

const shared = {
  resolve: { conditions: ["@jitbox/source"] },
  ssr: { resolve: { conditions: ["@jitbox/source"] } }
}

export default defineConfig({
  ...shared,
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        ...shared,
        test: {
          name: "default",
          include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts", "examples/**/*.test.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000
        }
      },
      {
        ...shared,
        test: {
          name: "sandboxed",
          include: ["packages/core/test/Composition.test.ts", "packages/core/test/Packages.test.ts", "packages/core/test/UpdateUnload.test.ts"],
          setupFiles: ["test/setup/sandboxedMode.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000
        }
      }
    ]
  }
})
