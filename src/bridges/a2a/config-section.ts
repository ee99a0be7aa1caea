/** The `a2a:` section: the A2A agent (on by default), its card and its task bounds. */
import { flag, ms, num, perPrincipalDefault } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';
import type { GatewayConfig } from '../../config/types.ts';

/** The agent card's description when `a2a.description` is absent. */
const DEFAULT_AGENT_DESCRIPTION = 'Sends commands to the services behind this gateway and reports the events they produce as task artifacts.';

/** `a2a:` (enabled, settle 2s, timeout 60s, 10,000 tasks kept 24h). */
export const a2aSection: ConfigSection<'a2a'> = {
  key: 'a2a',
  schema: {
    "type": "object",
    "description": "The A2A agent surface.",
    "additionalProperties": false,
    "properties": {
      "enabled": {
        "type": "boolean",
        "description": "Serve the A2A agent card and endpoint. Default true.",
        "default": true
      },
      "settle": {
        "$ref": "#/definitions/duration",
        "description": "A task completes this long after its last event when no terminal event came. Default 2s.",
        "default": "2s"
      },
      "timeout": {
        "$ref": "#/definitions/duration",
        "description": "A task without events fails after this long. Default 60s.",
        "default": "60s"
      },
      "name": {
        "type": "string",
        "minLength": 1,
        "description": "The agent card's name. Default proto-gateway.",
        "default": "proto-gateway"
      },
      "description": {
        "type": "string",
        "minLength": 1,
        "description": "The agent card's description. Default: a sentence naming the gateway's role."
      },
      "maxTasks": {
        "type": "integer",
        "minimum": 1,
        "description": "Tasks kept for GetTask and ListTasks at most; the oldest is dropped first. Default 10000.",
        "default": 10000
      },
      "taskTtl": {
        "$ref": "#/definitions/duration",
        "description": "A task is forgotten this long after its last update. Default 24h.",
        "default": "24h"
      },
      "publicSkills": {
        "type": "boolean",
        "description": "The public agent card lists the command catalogue as skills. Default false: only the authenticated extended card (GetExtendedAgentCard, scope read) carries it.",
        "default": false
      },
      "maxTasksPerPrincipal": {
        "type": "integer",
        "minimum": 1,
        "description": "Tasks one principal keeps at most, over all tenants; a message that would create one more is refused (429 QUOTA_EXCEEDED) until some expire (taskTtl). Default half of maxTasks."
      },
      "maxPushConfigsPerTask": {
        "type": "integer",
        "minimum": 1,
        "description": "Push-notification configs of one task at most (beyond: 429 QUOTA_EXCEEDED). Default 10.",
        "default": 10
      },
      "maxPushConfigsPerPrincipal": {
        "type": "integer",
        "minimum": 1,
        "description": "Push-notification configs of one principal at most, over all its tasks (beyond: 429 QUOTA_EXCEEDED). Default 1000.",
        "default": 1000
      },
      "maxPendingPush": {
        "type": "integer",
        "minimum": 1,
        "description": "Push notifications waiting for delivery at most, per replica; beyond it new ones are dropped and counted. Default 1000.",
        "default": 1000
      },
      "maxPendingPushPerPrincipal": {
        "type": "integer",
        "minimum": 1,
        "description": "Push notifications of one principal's tasks waiting at most, per replica; beyond it that principal's new ones are dropped and counted. Default half of maxPendingPush."
      }
    }
  },
  defaults(value): GatewayConfig['a2a'] {
    const raw = asMap(value);
    const maxTasks = num(raw.maxTasks, 10_000);
    const maxPendingPush = num(raw.maxPendingPush, 1000);
    return {
      enabled: flag(raw.enabled, true),
      settleMs: ms(raw.settle, '2s'),
      timeoutMs: ms(raw.timeout, '60s'),
      name: typeof raw.name === 'string' ? raw.name : 'proto-gateway',
      description: typeof raw.description === 'string' ? raw.description : DEFAULT_AGENT_DESCRIPTION,
      maxTasks,
      taskTtlMs: ms(raw.taskTtl, '24h'),
      publicSkills: flag(raw.publicSkills, false),
      maxTasksPerPrincipal: num(raw.maxTasksPerPrincipal, perPrincipalDefault(maxTasks, maxTasks)),
      maxPushConfigsPerTask: num(raw.maxPushConfigsPerTask, 10),
      maxPushConfigsPerPrincipal: num(raw.maxPushConfigsPerPrincipal, 1000),
      maxPendingPush,
      maxPendingPushPerPrincipal: num(raw.maxPendingPushPerPrincipal, perPrincipalDefault(maxPendingPush, maxPendingPush)),
    };
  },
};
