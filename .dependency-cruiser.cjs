// The import rules of docs/architecture.md, "Layers": machines/ ← src/ ← actors/, no cycles.
// Checked by test/architecture.test.ts (npm test); `npx depcruise src actors machines` shows them.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'No import cycles, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'src-not-to-actors',
      comment: 'The runtime library (src/) never imports the worker entries (actors/).',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^actors/' },
    },
    {
      name: 'machines-are-pure',
      comment: 'machines/ are pure XState machines: they import xstate, each other and the protocol types in src/protocol/, nothing else.',
      severity: 'error',
      from: { path: '^machines/' },
      to: { pathNot: ['^machines/', '^src/protocol/', 'node_modules/xstate/'] },
    },
    {
      name: 'machines-protocol-types-only',
      comment: 'What machines/ take from src/protocol/ is types.',
      severity: 'error',
      from: { path: '^machines/' },
      to: { path: '^src/protocol/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'nothing-imports-tests-or-scripts',
      comment: 'Shipped code never imports tests, benches or scripts.',
      severity: 'error',
      from: { path: '^(src|actors|machines)/' },
      to: { path: '^(test|scripts|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mts', '.js', '.mjs'] },
  },
};
