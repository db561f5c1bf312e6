// comlink ships ESM files without an exports map or .d.mts; these aliases give the
// ESM entry points the types of the package (its own types describe the CommonJS build).
declare module 'comlink/dist/esm/comlink.mjs' {
  export * from 'comlink';
}

declare module 'comlink/dist/esm/node-adapter.mjs' {
  import type { Endpoint } from 'comlink';
  export default function nodeEndpoint(nep: unknown): Endpoint;
}
