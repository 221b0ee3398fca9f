// An EventRecorder that keeps what the operator would post, for tests that assert events.

import type { EventRecorder, EventType, InvolvedObject } from "../../src/controller/events.ts";

export interface RecordedEvent {
  object: string;
  type: EventType;
  reason: string;
  message: string;
}

export class RecordingEvents implements EventRecorder {
  readonly events: RecordedEvent[] = [];

  event(obj: InvolvedObject, type: EventType, reason: string, message: string): void {
    this.events.push({ object: obj.metadata?.name ?? "", type, reason, message });
  }

  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}
