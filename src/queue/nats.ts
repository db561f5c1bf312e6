/**
 * The NATS client as Hive loads it on demand: `await import('./nats.ts')`, never a dynamic
 * import of the packages themselves. They are CommonJS, and a bundle (the CLI's, esbuild's
 * split chunks) gives a dynamic import of CommonJS only its `default`: `connect` would be
 * undefined in `hive start`. Imported statically here, they interoperate in every build.
 */
import { connect as natsConnect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';

/**
 * Every connection Hive opens. `noAsyncTraces`: by default the client builds an Error (a
 * stack capture) for each request and publish up front, in case it fails; Hive turns a
 * failure into its own error (`E_UNAVAILABLE` with the cause) anyway. On the cluster's
 * round trip that was the router's largest item of JavaScript.
 */
export function connect(options: ConnectionOptions): Promise<NatsConnection> {
  return natsConnect({ noAsyncTraces: true, ...options });
}
export { Kvm } from '@nats-io/kv';
export { jetstreamManager } from '@nats-io/jetstream';
