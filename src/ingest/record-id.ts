/**
 * Ids of the events mapped from legacy records (DESIGN.md, Conventions, Record event ids): a
 * UUIDv5 of `{backendId}\n{records path}\n{id template result}` in one fixed namespace, so
 * re-polling a record yields the same id (the log drops it as a duplicate) and two backends or two
 * record paths never collide.
 */
import { v5 as uuidv5 } from 'uuid';

/** The project's UUIDv5 namespace for record event ids. Never change it: stored ids depend on it. */
export const RECORD_EVENT_NAMESPACE = 'c75576c3-f2c7-4048-86aa-0f5079b8280b';

/** The event id of a record: deterministic in its three inputs. */
export function recordEventId(backendId: string, recordsPath: string, idTemplateResult: string): string {
  return uuidv5(`${backendId}\n${recordsPath}\n${idTemplateResult}`, RECORD_EVENT_NAMESPACE);
}
