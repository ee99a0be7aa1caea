/**
 * The gateway's own documents: its JSON Schemas at `/schemas/{name}.json`
 * (`application/schema+json`) and a short generated page per capability at `/spec/{capability}`.
 * Both are read or generated once, at boot.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { ProtoError } from '../../errors.ts';
import { GATEWAY_SERVICE, type CapabilitySpec } from '../../manifest/capabilities.ts';
import type { Route } from '../route.ts';

const SCHEMA_DIR = new URL('../../../schemas/', import.meta.url);

/** The gateway's JSON Schemas by file name (`manifest.json` …), rewritten so `$id` is absolute. */
export function loadSchemas(publicUrl: string): Map<string, string> {
  const schemas = new Map<string, string>();
  for (const file of readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.json'))) {
    const schema = JSON.parse(readFileSync(new URL(file, SCHEMA_DIR), 'utf8')) as Record<string, unknown>;
    schema.$id = `${publicUrl}schemas/${file}`;
    schemas.set(file, JSON.stringify(schema, null, 2));
  }
  return schemas;
}

/** `/schemas/:name` and `/spec/:capability`. */
export function docsRoutes(publicUrl: string, capabilities: CapabilitySpec[]): Route[] {
  const schemas = loadSchemas(publicUrl);
  const pages = new Map(capabilities.map((c) => [c.name, capabilityPage(c, publicUrl)]));
  pages.set(GATEWAY_SERVICE, servicePage(capabilities, publicUrl));
  return [
    {
      method: 'GET',
      path: '/schemas/:name',
      public: true,
      handle: (ctx) => {
        const schema = schemas.get(ctx.params.name);
        if (!schema) throw new ProtoError('NOT_FOUND', `no schema "${ctx.params.name}"`);
        return { status: 200, body: schema, contentType: 'application/schema+json' };
      },
    },
    {
      method: 'GET',
      path: '/spec/:capability',
      public: true,
      handle: (ctx) => {
        const page = pages.get(ctx.params.capability);
        if (!page) throw new ProtoError('NOT_FOUND', `no specification for "${ctx.params.capability}"`);
        return { status: 200, body: page, contentType: 'text/html; charset=utf-8' };
      },
    },
  ];
}

function capabilityPage(c: CapabilitySpec, publicUrl: string): string {
  const rows = c.endpoints
    .map((e) => `<tr><td>${e.method}</td><td><code>${escape(e.path)}</code></td><td>${escape(e.description ?? '')}</td></tr>`)
    .join('\n');
  const push = c.push ? `<p>Push channels: ${Object.entries(c.push).map(([k, v]) => `${k}: ${v}`).join(', ')}</p>` : '';
  return page(c.name, `<p>${escape(c.description)} (version ${c.version}${c.extends ? `, extends ${escape(c.extends)}` : ''})</p>
<p>Base URL: <code>${escape(publicUrl)}</code>. Schema: <a href="${publicUrl}schemas/${c.schemaName}.json">${c.schemaName}.json</a></p>${push}
<table><tr><th>Method</th><th>Path</th><th>Description</th></tr>
${rows}
</table>`);
}

function servicePage(capabilities: CapabilitySpec[], publicUrl: string): string {
  const items = capabilities.map((c) => `<li><a href="${publicUrl}spec/${c.name}">${c.name}</a>: ${escape(c.description)}</li>`).join('\n');
  return page(GATEWAY_SERVICE, `<p>The gateway's own service. Discovery: <a href="${publicUrl}.well-known/proto">${publicUrl}.well-known/proto</a></p>
<ul>
${items}
</ul>`);
}

function page(title: string, body: string): string {
  return `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escape(title)}</title></head>\n<body><h1>${escape(title)}</h1>\n${body}\n</body></html>\n`;
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}
