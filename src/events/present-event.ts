import type { PublicEvent } from "../domain/public.js";
import type { EventRecord } from "../store/index.js";
import type { EngineCore } from "../engine/core.js";
import { signInUrl } from "../engine/present/index.js";

/** The public JSON of an event, its challenge's live link rebuilt from the sealed token. */
export async function presentEvent(core: Pick<EngineCore, "store" | "publicUrl">, event: EventRecord): Promise<PublicEvent> {
  const data = structuredClone(event.data);
  const challenge = data.challenge as Record<string, unknown> | undefined;
  if (challenge && event.challenge_id) {
    const action = await core.store.actions.get(event.subject_id);
    if (action) challenge.sign_in_url = await signInUrl(core, event.challenge_id);
  }
  return { id: event.id, type: event.type, created_at: event.created_at, data };
}
