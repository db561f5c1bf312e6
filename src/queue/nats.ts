/**
 * The NATS client as Hive loads it on demand: `await import('./nats.ts')`, never a dynamic
 * import of the packages themselves. They are CommonJS, and a bundle (the CLI's, esbuild's
 * split chunks) gives a dynamic import of CommonJS only its `default`: `connect` would be
 * undefined in `hive start`. Imported statically here, they interoperate in every build.
 */
export { connect } from '@nats-io/transport-node';
export { Kvm } from '@nats-io/kv';
export { jetstreamManager } from '@nats-io/jetstream';
