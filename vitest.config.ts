import { defineConfig } from 'vitest/config';

// One run over every package. The `@mnemo/source` export condition makes workspace
// packages resolve to their TypeScript sources, so tests need no build first.
// Under CI a JSON report is written as well; `.ci/run` reads its counts.
export default defineConfig({
  ssr: { resolve: { conditions: ['@mnemo/source'] } },
  resolve: { conditions: ['@mnemo/source'] },
  test: {
    globalSetup: ['./vitest.global-setup.ts'],
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'tests/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: '.ci/test-results.json' }]]
      : ['default'],
  },
});
