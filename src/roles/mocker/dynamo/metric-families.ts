// The Dynamo runtime's own counters on DYN_SYSTEM_PORT's /metrics, beside the engines' (vLLM's names):
// the request plane, the state agent's attachments (KVCR mode) and the prefill side's hand-overs.
import type { MetricFamily } from "../../../protocol/prometheus.ts";
import type { HandoffStats } from "../pd/handoff-source.ts";
import type { RequestPlaneStats } from "./request-plane.ts";

const counter = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: "counter", samples: [{ value }] });
const gauge = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: "gauge", samples: [{ value }] });

export function requestPlaneFamilies(s: RequestPlaneStats): MetricFamily[] {
  return [
    counter("kvcr_mocker_dynamo_requests_total", "Requests accepted on Dynamo's request plane", s.requests),
    counter("kvcr_mocker_dynamo_requests_refused_total", "Requests refused on Dynamo's request plane (malformed, unknown endpoint or rank)", s.refused),
    counter("kvcr_mocker_dynamo_requests_cancelled_total", "Requests Dynamo's frontend cancelled (stop, kill or a closed stream)", s.cancelled),
    counter("kvcr_mocker_dynamo_unknown_fields_total", "Request fields this worker does not read, ignored", s.unknownFields),
  ];
}

export function agentFamilies(s: { intents: number; attached: number }): MetricFamily[] {
  return [
    gauge("kvcr_mocker_dynamo_state_agent_intents", "Attachment intents this process wrote for Dynamo's state agent (one per worker and rank)", s.intents),
    gauge("kvcr_mocker_dynamo_state_agent_attached", "Of those, the ones Dynamo's state agent has attached", s.attached),
  ];
}

export function handoffFamilies(s: HandoffStats): MetricFamily[] {
  return [
    counter("kvcr_mocker_dynamo_handoffs_total", "Decode workers that met their prefill on a bootstrap port and were handed its KV", s.handedOver),
    counter("kvcr_mocker_dynamo_handoffs_aborted_total", "Decode workers whose prefill ended without its KV", s.aborted),
    counter("kvcr_mocker_dynamo_handoffs_timed_out_total", "Decode workers that waited past the rendezvous timeout", s.timedOut),
    counter("kvcr_mocker_dynamo_handoffs_failed_total", "Hand-overs broken off: a protocol error or the decode worker going away", s.failed),
  ];
}
