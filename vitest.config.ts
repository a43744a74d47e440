import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: { conditions: ["@jitbox/source"] },
  ssr: { resolve: { conditions: ["@jitbox/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
