/**
 * The `webhooks:` section: SSRF allowances, retries, timeouts, bounds and the keys sealing
 * subscription secrets at rest. Checks: CIDR syntax, 32-byte keys, a readable `ca` file.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { flag, ms, num, schedule, strings } from '../../config/defaults.ts';
import type { ConfigPath } from '../../config/problems.ts';
import { asList, asMap, asText, type RawMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';
import { checkNetworks } from '../../config/semantic-checks.ts';
import type { WebhooksConfig } from '../../config/types.ts';
import type { Reporter } from '../../config/yaml-source.ts';
import { decodeSecretKey } from './secret-box.ts';

/** `webhooks:` (https only, public targets only, retries 5s…24h, timeout 15s, 64 at once). */
export const webhooksSection: ConfigSection<'webhooks'> = {
  key: 'webhooks',
  schema: {
    "type": "object",
    "description": "Webhook subscriptions (/subscriptions).",
    "additionalProperties": false,
    "properties": {
      "allowPrivateNetworks": {
        "type": "array",
        "description": "CIDRs exempted from the SSRF guard (e.g. 127.0.0.0/8 in tests). Default none.",
        "items": {
          "type": "string",
          "description": "A CIDR block, e.g. 10.0.0.0/8 or ::1/128."
        },
        "default": []
      },
      "allowHttp": {
        "type": "boolean",
        "description": "Allow plain http targets (default only https). Default false.",
        "default": false
      },
      "retry": {
        "type": "object",
        "description": "Redelivery of failed deliveries.",
        "additionalProperties": false,
        "properties": {
          "schedule": {
            "type": "array",
            "description": "Delays of the redeliveries; after the last one the delivery is dead-lettered. Default [5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h].",
            "items": {
              "$ref": "#/definitions/duration",
              "description": "Delay before this retry."
            },
            "default": [
              "5s",
              "5m",
              "30m",
              "2h",
              "5h",
              "10h",
              "14h",
              "20h",
              "24h"
            ]
          }
        }
      },
      "timeout": {
        "$ref": "#/definitions/duration",
        "description": "Timeout of one delivery. Default 15s.",
        "default": "15s"
      },
      "concurrency": {
        "type": "integer",
        "description": "Deliveries in flight overall (4 per subscription). Default 64.",
        "minimum": 1,
        "default": 64
      },
      "secretKey": {
        "type": "string",
        "description": "32 random bytes in base64 (normally ${ENV}): webhook secrets are stored encrypted with it (AES-256-GCM). Default none: secrets stored in plain text, with a warning at start-up.",
        "minLength": 1
      },
      "previousSecretKeys": {
        "type": "array",
        "description": "Former secretKey values (base64): secrets sealed with them stay readable after a rotation. Default none.",
        "items": {
          "type": "string",
          "minLength": 1
        },
        "default": []
      },
      "maxSubscriptionsPerPrincipal": {
        "type": "integer",
        "description": "Subscriptions one principal may hold; beyond, POST /subscriptions is 429 TOO_MANY_SUBSCRIPTIONS. Default 100.",
        "minimum": 1,
        "default": 100
      },
      "maxSubscriptions": {
        "type": "integer",
        "description": "Active subscriptions of all principals together; beyond, 429 TOO_MANY_SUBSCRIPTIONS. Default 10000.",
        "minimum": 1,
        "default": 10000
      },
      "ca": {
        "type": "string",
        "description": "Extra CA file (PEM) to trust, relative to this config file. Default none.",
        "minLength": 1
      }
    }
  },
  check(config, report) {
    const webhooks = asMap(config.webhooks);
    checkNetworks(webhooks.allowPrivateNetworks, ['webhooks', 'allowPrivateNetworks'], report);
    checkSecretKeys(webhooks, report);
  },
  checkFiles: (config, baseDir, report) => checkCaFile(config, baseDir, report),
  defaults(value, context): WebhooksConfig {
    const raw = asMap(value);
    const config: WebhooksConfig = {
      allowPrivateNetworks: strings(raw.allowPrivateNetworks),
      allowHttp: flag(raw.allowHttp, false),
      retry: { scheduleMs: schedule(asMap(raw.retry).schedule, ['5s', '5m', '30m', '2h', '5h', '10h', '14h', '20h', '24h']) },
      timeoutMs: ms(raw.timeout, '15s'),
      concurrency: num(raw.concurrency, 64),
      previousSecretKeys: strings(raw.previousSecretKeys),
      maxSubscriptionsPerPrincipal: num(raw.maxSubscriptionsPerPrincipal, 100),
      maxSubscriptions: num(raw.maxSubscriptions, 10_000),
    };
    if (typeof raw.ca === 'string') config.ca = resolve(context.dir, raw.ca);
    if (typeof raw.secretKey === 'string') config.secretKey = raw.secretKey;
    return config;
  },
};

/** `webhooks.secretKey` and each previous key are 32 bytes in base64 (AES-256). */
function checkSecretKeys(webhooks: RawMap, report: Reporter): void {
  const check = (value: unknown, path: ConfigPath) => {
    if (typeof value !== 'string') return;
    try {
      decodeSecretKey(value);
    } catch (err) {
      report(path, (err as Error).message);
    }
  };
  check(webhooks.secretKey, ['webhooks', 'secretKey']);
  asList(webhooks.previousSecretKeys).forEach((key, index) => check(key, ['webhooks', 'previousSecretKeys', index]));
}

/** Reports a `webhooks.ca` that cannot be read or holds no PEM certificate (read only once running, so checked at load). */
async function checkCaFile(config: RawMap, baseDir: string, report: Reporter): Promise<void> {
  const ca = asText(asMap(config.webhooks).ca);
  if (ca === undefined) return;
  const path = ['webhooks', 'ca'];
  let text: string;
  try {
    text = await readFile(resolve(baseDir, ca), 'utf8');
  } catch (err) {
    report(path, `cannot read ${resolve(baseDir, ca)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    return;
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) report(path, `${resolve(baseDir, ca)} holds no PEM certificate`);
}
