import { afterAll, beforeAll } from 'vitest';
import { startNatsServer, type NatsServer } from './nats-server.ts';

/**
 * One nats-server for the calling test file: started before its tests, stopped after them.
 * (Apart from ./nats-server.ts, which scripts import too: this one needs vitest.)
 */
export function natsServerForFile(): { readonly url: string } {
  let server: NatsServer | null = null;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get url() {
      if (!server) throw new Error('the nats-server of this test file is not started yet');
      return server.url;
    },
  };
}
