/**
 * Catalogue: the commands, queries and event types the gateway knows, each schema shown as a
 * table of its properties (and as JSON), and for a command a form generated from its schema
 * (schema-form.ts) that sends it (`POST /commands`, write scope) and follows its correlated events
 * live (`events/stream?correlationId=`), the stream opened before the command is sent.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { formData, formFields, initialValues, type Field, type FormValues, type JsonSchema } from '../schema-form.ts';
import type { CatalogueItem, CloudEvent } from '../types.ts';
import { ErrorNote, JsonBlock, PageHeading, usePoll } from '../ui.tsx';

type Kind = 'commands' | 'queries' | 'events';

const KINDS: Array<{ kind: Kind; title: string; list: string; field: string }> = [
  { kind: 'commands', title: 'Commands', list: 'commands', field: 'commands' },
  { kind: 'queries', title: 'Queries', list: 'queries', field: 'queries' },
  { kind: 'events', title: 'Event types', list: 'events/catalogue', field: 'events' },
];

interface Selection {
  kind: Kind;
  item: CatalogueItem;
}

export function CataloguePage({ api }: { api: Api }) {
  const [selected, setSelected] = useState<Selection>();
  return (
    <section>
      <PageHeading>Catalogue</PageHeading>
      <div class="columns">
        <div class="lists">
          {KINDS.map((k) => <CatalogueList key={k.kind} api={api} {...k} selected={selected} onSelect={(item) => setSelected({ kind: k.kind, item })} />)}
        </div>
        <div class="detail">{selected ? <EntryDetail key={`${selected.kind}/${selected.item.schema}/${selected.item.version}`} api={api} {...selected} /> : <p class="hint">Choose an entry to see its schema.</p>}</div>
      </div>
    </section>
  );
}

function CatalogueList({ api, kind, title, list, field, selected, onSelect }: { api: Api; kind: Kind; title: string; list: string; field: string; selected: Selection | undefined; onSelect: (item: CatalogueItem) => void }) {
  const entries = usePoll(() => api.get<Record<string, CatalogueItem[]>>(list), 30_000);
  return (
    <section aria-labelledby={`list-${kind}`}>
      <h2 id={`list-${kind}`}>{title}</h2>
      <ErrorNote error={entries.error} />
      <ul class="entries">
        {(entries.data?.[field] ?? []).map((item) => {
          const current = selected?.kind === kind && selected.item.schema === item.schema && selected.item.version === item.version;
          return (
            <li key={`${item.schema}/${item.version}`}>
              <button type="button" class="link" aria-pressed={current} onClick={() => onSelect(item)}>
                {item.schema} <span class="sub">v{item.version}</span>
              </button>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

function EntryDetail({ api, kind, item }: Selection & { api: Api }) {
  const [schema, setSchema] = useState<JsonSchema>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    api.get<JsonSchema>(`${kind}/${encodeURIComponent(item.schema)}/${encodeURIComponent(item.version)}`).then(setSchema, setError);
  }, []);
  return (
    <article aria-labelledby="entry-title">
      <h2 id="entry-title">{item.schema} <span class="sub">v{item.version}</span></h2>
      {item.description && <p>{item.description}</p>}
      <ErrorNote error={error} />
      {schema && (
        <>
          <SchemaTable schema={kind === 'queries' && isObject(schema.parameters) ? (schema.parameters as JsonSchema) : schema} />
          {Array.isArray(schema.produces) && <p>Produces: {(schema.produces as string[]).join(', ')}</p>}
          <details>
            <summary>Schema as JSON</summary>
            <JsonBlock value={schema} label={`JSON Schema of ${item.schema}`} />
          </details>
          {kind === 'commands' && <CommandForm api={api} item={item} schema={schema} />}
        </>
      )}
    </article>
  );
}

/** The properties of a schema, nested ones with their dotted path. */
function SchemaTable({ schema }: { schema: JsonSchema }) {
  const rows = propertyRows(schema, '');
  if (rows.length === 0) return <p class="hint">No properties declared.</p>;
  return (
    <div class="scroll">
      <table>
        <caption>Properties</caption>
        <thead>
          <tr><th scope="col">Property</th><th scope="col">Type</th><th scope="col">Required</th><th scope="col">Constraints</th><th scope="col">Description</th></tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.path}><th scope="row"><code>{r.path}</code></th><td>{r.type}</td><td>{r.required ? 'yes' : 'no'}</td><td>{r.constraints}</td><td class="wrap">{r.description}</td></tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface PropertyRow {
  path: string;
  type: string;
  required: boolean;
  constraints: string;
  description: string;
}

const CONSTRAINTS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'pattern', 'format', 'minItems', 'maxItems', 'default'];

function propertyRows(schema: JsonSchema, prefix: string): PropertyRow[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).flatMap(([name, property]) => {
    const type = [property.type ?? 'any'].flat().join(' | ') + (property.items?.type ? ` of ${[property.items.type].flat().join(' | ')}` : '');
    const constraints = [
      ...(property.enum ? [`one of ${property.enum.map((v) => JSON.stringify(v)).join(', ')}`] : []),
      ...CONSTRAINTS.filter((c) => property[c] !== undefined).map((c) => `${c} ${JSON.stringify(property[c])}`),
    ].join('; ');
    const row = { path: prefix + name, type, required: required.has(name), constraints, description: property.description ?? '' };
    return [row, ...propertyRows(property, `${prefix}${name}.`)];
  });
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `place-order` → `PlaceOrder`: a command's type is the PascalCase of its schema (DESIGN.md, Catalogue). */
function commandType(schema: string): string {
  return schema.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
}

/** A UUID v4 from `crypto.getRandomValues`, which (unlike `randomUUID`) also exists on plain-http pages. */
function uuid(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Opens a stream of the events correlated with `id`; resolves once it is open (or failed to open). */
function follow(api: Api, id: string, onEvent: (event: CloudEvent) => void): Promise<EventSource> {
  const source = new EventSource(api.streamUrl({ correlationId: id }));
  source.onmessage = (message: MessageEvent<string>) => onEvent(JSON.parse(message.data) as CloudEvent);
  return new Promise((resolve) => {
    source.onopen = () => resolve(source);
    // The gateway ends the stream after the command's terminal event: do not reconnect then.
    source.onerror = () => {
      source.close();
      resolve(source);
    };
  });
}

function CommandForm({ api, item, schema }: { api: Api; item: CatalogueItem; schema: JsonSchema }) {
  const fields = formFields(schema);
  const [values, setValues] = useState<FormValues>(() => initialValues(fields));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [sent, setSent] = useState<string>();
  const [sendError, setSendError] = useState<unknown>();
  const [events, setEvents] = useState<CloudEvent[]>([]);
  const [stream, setStream] = useState<EventSource>();
  useEffect(() => () => stream?.close(), [stream]);
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const result = formData(fields, values);
    if (!result.ok) return setErrors(result.errors);
    setErrors({});
    setSendError(undefined);
    stream?.close();
    setEvents([]);
    const id = uuid();
    const opened = api.canStream ? await follow(api, id, (e) => setEvents((list) => [...list, e])) : undefined;
    setStream(opened);
    const envelope = {
      specversion: '1.0', id, source: 'urn:proto-gateway:console', type: commandType(item.schema),
      datacontenttype: 'application/json', dataschema: item.dataschema ?? `${item.schema}/${item.version}`, time: new Date().toISOString(), data: result.data,
    };
    try {
      const accepted = await api.post<{ id: string }>('commands', envelope);
      setSent(accepted.id);
    } catch (err) {
      opened?.close();
      setSendError(err);
    }
  };
  return (
    <form class="command-form" onSubmit={submit} noValidate aria-labelledby="form-title">
      <h3 id="form-title">Send {commandType(item.schema)}</h3>
      {fields.length === 0 && <p class="hint">This command takes no fields.</p>}
      <FieldList fields={fields} values={values} errors={errors} onChange={(key, value) => setValues((v) => ({ ...v, [key]: value }))} />
      <button type="submit">Send command</button>
      <ErrorNote error={sendError} />
      {sent && (
        <div class="follow" aria-live="polite">
          <p>Accepted with correlation id <code data-correlation-id={sent}>{sent}</code>{api.canStream ? '; its events:' : '.'}</p>
          <ol class="events">
            {events.map((e) => <li key={e.id}><strong>{e.type}</strong> <span class="sub">{e.source} · {e.time}</span><JsonBlock value={e.data} label={`data of ${e.type}`} /></li>)}
          </ol>
          {!api.canStream && <p class="hint">Following events needs <code>auth.queryParam</code> in the gateway's config.</p>}
        </div>
      )}
    </form>
  );
}

function FieldList({ fields, values, errors, onChange }: { fields: Field[]; values: FormValues; errors: Record<string, string>; onChange: (key: string, value: string | boolean) => void }) {
  return <>{fields.map((field) => <FieldInput key={field.key} field={field} values={values} errors={errors} onChange={onChange} />)}</>;
}

function FieldInput({ field, values, errors, onChange }: { field: Field; values: FormValues; errors: Record<string, string>; onChange: (key: string, value: string | boolean) => void }) {
  if (field.kind === 'object') {
    return (
      <fieldset>
        <legend>{field.label}{field.required && <span aria-hidden="true"> *</span>}</legend>
        {field.description && <p class="hint">{field.description}</p>}
        <FieldList fields={field.fields} values={values} errors={errors} onChange={onChange} />
      </fieldset>
    );
  }
  const id = `field-${field.key}`;
  const error = errors[field.key];
  const described = [field.description ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  const common = { id, name: field.key, 'aria-describedby': described, 'aria-invalid': error ? true : undefined, required: field.required };
  const text = (e: Event): void => onChange(field.key, (e.currentTarget as HTMLInputElement).value);
  const value = values[field.key];
  return (
    <div class={`field ${field.kind}`}>
      <label for={id}>{field.label}{field.required && <span aria-hidden="true"> *</span>}</label>
      {field.kind === 'boolean' && <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(field.key, e.currentTarget.checked)} />}
      {field.kind === 'text' && <input {...common} type="text" value={String(value)} onInput={text} minLength={field.minLength} maxLength={field.maxLength} />}
      {field.kind === 'number' && <input {...common} type="number" value={String(value)} onInput={text} min={field.minimum} max={field.maximum} step={field.integer ? 1 : 'any'} />}
      {field.kind === 'enum' && (
        <select {...common} value={String(value)} onChange={text}>
          <option value="">—</option>
          {field.options.map((o) => <option key={JSON.stringify(o)} value={JSON.stringify(o)}>{String(o)}</option>)}
        </select>
      )}
      {(field.kind === 'list' || field.kind === 'json') && <textarea {...common} rows={3} value={String(value)} onInput={text} />}
      {field.kind === 'list' && <span class="hint">One {field.itemType} per line.</span>}
      {field.description && <span id={`${id}-help`} class="hint">{field.description}</span>}
      {error && <span id={`${id}-error`} class="error">{error}</span>}
    </div>
  );
}
