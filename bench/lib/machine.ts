// One line saying what the figures above ran on: CPUs and the 1-minute load average as measured
// now (a busy machine slows every figure; the line reports it instead of assuming it).
import { cpus, loadavg } from "node:os";

export function machineLine(extra = ""): string {
  return `machine: ${cpus().length} CPUs, 1-minute load average ${loadavg()[0]!.toFixed(2)} at the end of the run${extra ? `; ${extra}` : ""}`;
}
