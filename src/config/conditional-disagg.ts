// The frontend's conditional disaggregation flags (Dynamo's names): with prefill workers in
// discovery, a request whose effective prompt on its decode worker is small enough skips the
// prefill worker (policy isl_bounding, src/core/routing/conditional-disagg.ts).
import { group } from "./options.ts";

/** Dynamo's defaults: eff_isl_threshold 2048 tokens, eff_isl_ratio_threshold 0.7. */
export const DEFAULT_EFF_ISL_THRESHOLD = 2048;
export const DEFAULT_EFF_ISL_RATIO_THRESHOLD = 0.7;

export const conditionalDisaggOptions = group("Disaggregated serving", {
  routerConditionalDisagg: {
    kind: "bool",
    default: false,
    description:
      "With prefill workers for the model: prefill a request on its decode worker instead (no KV transfer) when its effective prompt there (prompt − cached prefix) is under both thresholds below (policy isl_bounding; needs --router-mode kv)",
  },
  routerConditionalDisaggEffIslThreshold: {
    kind: "int",
    min: 0,
    description: `With --router-conditional-disagg: the effective prompt must be under this many tokens (default ${DEFAULT_EFF_ISL_THRESHOLD})`,
  },
  routerConditionalDisaggEffIslRatioThreshold: {
    kind: "number",
    min: 0,
    max: 1,
    description: `With --router-conditional-disagg: the effective prompt must be under this share of the prompt (default ${DEFAULT_EFF_ISL_RATIO_THRESHOLD})`,
  },
});

export interface ConditionalDisaggConfig {
  routerMode: string;
  routerConditionalDisagg: boolean;
  routerConditionalDisaggEffIslThreshold?: number | undefined;
  routerConditionalDisaggEffIslRatioThreshold?: number | undefined;
}

/** The policy's thresholds, or undefined when conditional disaggregation is off. */
export function islBoundingOf(c: ConditionalDisaggConfig): { effIslThreshold: number; effIslRatioThreshold: number } | undefined {
  if (!c.routerConditionalDisagg) return undefined;
  return { effIslThreshold: c.routerConditionalDisaggEffIslThreshold ?? DEFAULT_EFF_ISL_THRESHOLD, effIslRatioThreshold: c.routerConditionalDisaggEffIslRatioThreshold ?? DEFAULT_EFF_ISL_RATIO_THRESHOLD };
}

/** Each contradiction names both flags. */
export function conditionalDisaggProblems(c: ConditionalDisaggConfig): string[] {
  const out: string[] = [];
  if (c.routerConditionalDisagg && c.routerMode !== "kv") out.push(`--router-conditional-disagg: needs the decode workers' cached prefixes, which only --router-mode kv prices; contradicts --router-mode ${c.routerMode}`);
  if (!c.routerConditionalDisagg) {
    if (c.routerConditionalDisaggEffIslThreshold !== undefined) out.push("--router-conditional-disagg-eff-isl-threshold: a threshold of --router-conditional-disagg, which is off");
    if (c.routerConditionalDisaggEffIslRatioThreshold !== undefined) out.push("--router-conditional-disagg-eff-isl-ratio-threshold: a threshold of --router-conditional-disagg, which is off");
  }
  return out;
}
