// The part of autocannon's API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    body?: string;
    /** setupRequest: changes each request before it is sent (a new body) */
    requests?: { setupRequest: (request: object) => object }[];
    headers?: Record<string, string>;
    connections?: number;
    duration?: number;
  }
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    /** of requests: how many completed */
    total: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    non2xx: number;
    /** how many answers each status code had */
    statusCodeStats: Record<string, { count: number }>;
    errors: number;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
