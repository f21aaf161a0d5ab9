// Where start-up time goes. Each step of opening the server ends with performance.mark(<step>) (the User Timing
// buffer is the process's own, so the steps of main, the server and the store need not know each other); the
// phases are the times between those marks, the first counted from the process's start (Node itself and the
// modules loaded before the first mark).
export function startUpPhases(): Record<string, number> {
  const phases: Record<string, number> = {};
  let last = 0;
  for (const mark of performance.getEntriesByType('mark')) {
    phases[mark.name] = Math.round(mark.startTime - last);
    last = mark.startTime;
  }
  return phases;
}
