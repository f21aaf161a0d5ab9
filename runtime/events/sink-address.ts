// Where events may be sent. A subscription's sink is a URL anyone with the capability chooses, and the server
// POSTs to it: the outbound address policy (runtime/access/outbound.ts) decides, when the subscription is made
// and again, on the connection itself, at every delivery.
import { urlProblem, type OutboundPolicy } from '../access/outbound.js';

/** Why a sink URL is refused at create, or undefined when it may be used. */
export function sinkUrlProblem(text: string, policy: OutboundPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'sink is not a URL';
  }
  const problem = urlProblem(url, policy);
  return problem && `sink: ${problem}`;
}
