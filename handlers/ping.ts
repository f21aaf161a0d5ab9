// Connectivity check: answers without authentication or a database round trip.
import type { PingHandlers, PingResponse } from '../generated/routes.js';

export const ping: PingHandlers = {
  async ping(): Promise<PingResponse> {
    return { response: 'pong' };
  },
  async pingV1(): Promise<PingResponse> {
    return { response: 'pong' };
  },
};
