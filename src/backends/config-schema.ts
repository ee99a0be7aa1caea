/**
 * The JSON Schema piece of the `backends:` section and the named schemas it uses (legacy and
 * protocol backends, commands, queries, records, names, mapping fields). Part of
 * `config/gateway.schema.json` (assembled from every section; a test keeps the file equal).
 */
import type { JsonSchema } from '../config/section.ts';

/** `properties.backends`. */
export const backendsSchema: JsonSchema = {
  "type": "array",
  "description": "The services behind the gateway. Default none.",
  "default": [],
  "items": {
    "$ref": "#/definitions/backend",
    "description": "A backend service."
  }
};

/** `definitions` used only by backends. */
export const backendsDefinitions: Record<string, JsonSchema> = {
  "access": {
    "type": "array",
    "minItems": 1,
    "items": { "type": "string", "minLength": 1 },
    "description": "Who sees and may use this backend, command or query: a caller holding any of these values (a gateway scope read/write/admin, or a value of its token's scope claim, e.g. a role). Hidden things are absent for the caller: not listed, and using one is 404 / UNKNOWN_COMMAND_TYPE. Default: everyone with the operation's scope."
  },
  "backendId": {
    "type": "string",
    "pattern": "^[a-z][a-z0-9-]*$",
    "description": "A backend id: [a-z][a-z0-9-]*."
  },
  "pascalName": {
    "type": "string",
    "pattern": "^[A-Z][A-Za-z0-9]*$",
    "description": "A PascalCase name."
  },
  "kebabName": {
    "type": "string",
    "pattern": "^[a-z][a-z0-9]*(-[a-z0-9]+)*$",
    "description": "A kebab-case name."
  },
  "httpMethod": {
    "type": "string",
    "enum": [
      "GET",
      "POST",
      "PUT",
      "PATCH",
      "DELETE"
    ],
    "description": "An HTTP method."
  },
  "expression": {
    "type": "string",
    "minLength": 1,
    "description": "A JSONata expression ($pascal and $kebab available)."
  },
  "template": {
    "type": "string",
    "minLength": 1,
    "description": "Literal text with {JSONata expression} placeholders."
  },
  "embeddedSchema": {
    "type": [
      "object",
      "boolean"
    ],
    "description": "A JSON Schema (draft 2020-12 unless its $schema says draft-07)."
  },
  "backend": {
    "type": "object",
    "description": "A backend service: legacy (mapped REST) or proto (speaks the protocol).",
    "required": [
      "kind"
    ],
    "properties": {
      "kind": {
        "type": "string",
        "enum": [
          "legacy",
          "proto"
        ],
        "description": "legacy: a REST service mapped by this config; proto: a service that speaks the protocol itself."
      }
    },
    "allOf": [
      {
        "if": {
          "properties": {
            "kind": {
              "const": "legacy",
              "description": "A legacy backend."
            }
          },
          "required": [
            "kind"
          ]
        },
        "then": {
          "$ref": "#/definitions/legacyBackend",
          "description": "A legacy backend."
        }
      },
      {
        "if": {
          "properties": {
            "kind": {
              "const": "proto",
              "description": "A proto backend."
            }
          },
          "required": [
            "kind"
          ]
        },
        "then": {
          "$ref": "#/definitions/protoBackend",
          "description": "A proto backend."
        }
      }
    ]
  },
  "legacyBackend": {
    "type": "object",
    "description": "A legacy REST service: its commands, queries and records are mapped by this config.",
    "additionalProperties": false,
    "required": [
      "id",
      "kind",
      "url"
    ],
    "properties": {
      ...sharedBackendProperties('legacy'),
      "correlationHeader": {
        "type": "string",
        "description": "Header carrying the command id to the legacy service. Default X-Request-Id.",
        "default": "X-Request-Id"
      },
      "commands": {
        "type": "array",
        "description": "Commands routed to this backend.",
        "items": {
          "$ref": "#/definitions/legacyCommand",
          "description": "A command."
        },
        "default": []
      },
      "queries": {
        "type": "array",
        "description": "Queries routed to this backend.",
        "items": {
          "$ref": "#/definitions/legacyQuery",
          "description": "A query."
        },
        "default": []
      },
      "records": {
        "type": "array",
        "description": "Record lists polled and turned into events.",
        "items": {
          "$ref": "#/definitions/records",
          "description": "A record list."
        },
        "default": []
      }
    }
  },
  "protoBackend": {
    "type": "object",
    "description": "A service that speaks the protocol: manifest, catalogues, /commands, /events.",
    "additionalProperties": false,
    "required": [
      "id",
      "kind",
      "url"
    ],
    "properties": {
      ...sharedBackendProperties('proto'),
      "refresh": {
        "$ref": "#/definitions/duration",
        "description": "How often its manifest and catalogues are re-read. Default 30s.",
        "default": "30s"
      },
      "events": {
        "type": "object",
        "description": "How its event log is followed.",
        "additionalProperties": false,
        "properties": {
          "follow": {
            "type": "string",
            "enum": [
              "poll",
              "stream"
            ],
            "default": "poll",
            "description": "poll: GET /events every interval; stream: GET /events/stream (SSE). Default poll."
          },
          "interval": {
            "$ref": "#/definitions/duration",
            "description": "Polling interval (and reconnect delay when streaming). Default 1s.",
            "default": "1s"
          }
        }
      }
    }
  },
  "legacyCommand": {
    "type": "object",
    "description": "A command of the legacy backend: its catalogue entry, request mapping and result events.",
    "additionalProperties": false,
    "required": [
      "type",
      "request"
    ],
    "properties": {
      "access": {
        "$ref": "#/definitions/access"
      },
      "type": {
        "$ref": "#/definitions/pascalName",
        "description": "Command type (PascalCase); must equal $pascal(schema)."
      },
      "schema": {
        "$ref": "#/definitions/kebabName",
        "description": "Catalogue schema name (kebab-case). Default: the type in kebab-case."
      },
      "version": {
        "type": "string",
        "description": "Catalogue version of the command. Default \"1.0\".",
        "minLength": 1,
        "pattern": "^[^/\\s]+$",
        "default": "1.0"
      },
      "description": {
        "type": "string",
        "description": "Human-readable description (command catalogue)."
      },
      "jsonSchema": {
        "$ref": "#/definitions/embeddedSchema",
        "description": "JSON Schema of the command data (inline). Exactly one of jsonSchema or schemaFile."
      },
      "schemaFile": {
        "type": "string",
        "description": "Path of a JSON file holding the JSON Schema of the command data, relative to this config file. Exactly one of jsonSchema or schemaFile.",
        "minLength": 1
      },
      "request": {
        "type": "object",
        "description": "The request sent to the legacy service for this command.",
        "additionalProperties": false,
        "required": [
          "path"
        ],
        "properties": {
          "method": {
            "$ref": "#/definitions/httpMethod",
            "description": "HTTP method. Default POST.",
            "default": "POST"
          },
          "path": {
            "$ref": "#/definitions/template",
            "description": "Path template, e.g. /orders/{data.id}; input { command, data }."
          },
          "body": {
            "$ref": "#/definitions/expression",
            "description": "JSONata expression of the JSON body; input { command, data }. Absent: no body."
          }
        }
      },
      "events": {
        "type": "object",
        "description": "Events the gateway emits with the outcome of the command.",
        "additionalProperties": false,
        "properties": {
          "success": {
            "type": "object",
            "description": "Event emitted when the legacy service answers 2xx.",
            "additionalProperties": false,
            "required": [
              "type"
            ],
            "properties": {
              "type": {
                "$ref": "#/definitions/pascalName",
                "description": "Event type, e.g. OrderPlacedV1."
              },
              "data": {
                "$ref": "#/definitions/expression",
                "description": "JSONata expression of the event data; input { command, data, response, status }."
              }
            }
          },
          "failure": {
            "type": "object",
            "description": "Event emitted when the command fails.",
            "additionalProperties": false,
            "properties": {
              "type": {
                "$ref": "#/definitions/pascalName",
                "description": "Event type. Default <CommandType>FailedV1."
              }
            }
          }
        }
      }
    },
    "oneOf": [
      {
        "required": [
          "jsonSchema"
        ]
      },
      {
        "required": [
          "schemaFile"
        ]
      }
    ],
    "x-message": "needs exactly one of jsonSchema or schemaFile"
  },
  "legacyQuery": {
    "type": "object",
    "description": "A query of the legacy backend: its catalogue entry and request mapping.",
    "additionalProperties": false,
    "required": [
      "schema",
      "request"
    ],
    "properties": {
      "access": {
        "$ref": "#/definitions/access"
      },
      "schema": {
        "$ref": "#/definitions/kebabName",
        "description": "Catalogue schema name (kebab-case), the {schema} of /queries/{schema}."
      },
      "version": {
        "type": "string",
        "description": "Catalogue version of the query. Default \"1.0\".",
        "minLength": 1,
        "pattern": "^[^/\\s]+$",
        "default": "1.0"
      },
      "description": {
        "type": "string",
        "description": "Human-readable description (query catalogue)."
      },
      "parameters": {
        "$ref": "#/definitions/embeddedSchema",
        "description": "JSON Schema of the query parameters."
      },
      "response": {
        "$ref": "#/definitions/embeddedSchema",
        "description": "JSON Schema of the query result. Default {} (anything)."
      },
      "request": {
        "type": "object",
        "description": "The request sent to the legacy service for this query.",
        "additionalProperties": false,
        "required": [
          "path"
        ],
        "properties": {
          "method": {
            "$ref": "#/definitions/httpMethod",
            "description": "HTTP method. Default GET.",
            "default": "GET"
          },
          "path": {
            "$ref": "#/definitions/template",
            "description": "Path template; input { params }."
          },
          "query": {
            "$ref": "#/definitions/expression",
            "description": "JSONata expression of an object of query-string parameters; input { params }."
          }
        }
      },
      "result": {
        "$ref": "#/definitions/expression",
        "description": "JSONata expression of the query result; input { response, status }. Absent: the response body."
      }
    }
  },
  "records": {
    "type": "object",
    "description": "A polled list of domain records turned into events.",
    "additionalProperties": false,
    "required": [
      "path",
      "types",
      "event"
    ],
    "x-required-why": {
      "types": "the event catalogue (GET /events/catalogue) is built from it before any record is read; list every event type the mapping can yield, e.g. types: [OrderCreatedV1, OrderShippedV1]"
    },
    "properties": {
      "path": {
        "type": "string",
        "description": "Literal path polled on the backend, e.g. /orders.",
        "pattern": "^/"
      },
      "interval": {
        "$ref": "#/definitions/duration",
        "description": "Time between polls. Default 2s.",
        "default": "2s"
      },
      "types": {
        "type": "array",
        "description": "The event types it can yield (for the event catalogue).",
        "minItems": 1,
        "uniqueItems": true,
        "items": {
          "$ref": "#/definitions/pascalName",
          "description": "An event type."
        }
      },
      "schema": {
        "type": "string",
        "description": "Path of a JSON Schema file of the event data (typed events), relative to this config file.",
        "minLength": 1
      },
      "cursor": {
        "type": "object",
        "description": "Incremental polling: the last seen value of field is sent in query parameter param.",
        "additionalProperties": false,
        "required": [
          "param",
          "field"
        ],
        "properties": {
          "param": {
            "type": "string",
            "description": "Query parameter carrying the cursor.",
            "minLength": 1
          },
          "field": {
            "type": "string",
            "description": "JSONata expression of the cursor value in a record.",
            "minLength": 1
          }
        }
      },
      "items": {
        "$ref": "#/definitions/expression",
        "description": "JSONata expression selecting the array of records in the response body. Default: the body."
      },
      "event": {
        "type": "object",
        "description": "How a record becomes an event; input: the record.",
        "additionalProperties": false,
        "required": [
          "type",
          "id"
        ],
        "properties": {
          "type": {
            "$ref": "#/definitions/template",
            "description": "Template of the event type, e.g. Order{$pascal(status)}V1."
          },
          "id": {
            "$ref": "#/definitions/template",
            "description": "Template of the record identity, hashed into a UUIDv5: re-polling never duplicates."
          },
          "time": {
            "$ref": "#/definitions/expression",
            "description": "JSONata expression of the event time (ISO 8601). Default: when it was polled."
          },
          "correlation": {
            "$ref": "#/definitions/expression",
            "description": "JSONata expression of the correlation id."
          },
          "data": {
            "$ref": "#/definitions/expression",
            "description": "JSONata expression of the event data. Default: the record."
          },
          "source": {
            "$ref": "#/definitions/template",
            "description": "Template of the event source. Default: the backend source."
          }
        }
      }
    }
  }
};

/** The properties every backend has, whatever its kind (`kind` is the one that differs). */
function sharedBackendProperties(kind: 'legacy' | 'proto'): Record<string, JsonSchema> {
  return {
    "id": {
      "$ref": "#/definitions/backendId",
      "description": "Backend id, [a-z][a-z0-9-]*, used in /services/{id}; unique among backends."
    },
    "kind": {
      "const": kind,
      "description": "legacy: a REST service mapped by this config; proto: a service that speaks the protocol itself."
    },
    "url": {
      "$ref": "#/definitions/httpUrl",
      "description": "Base URL of the backend (http or https); a trailing / is ignored."
    },
    "service": {
      "type": "string",
      "description": "Service key in the public manifest. Default: the backend id.",
      "minLength": 1
    },
    "description": {
      "type": "string",
      "description": "Human-readable description of the service in the public manifest."
    },
    "version": {
      "$ref": "#/definitions/semver",
      "description": "Semver of the service entry in the public manifest."
    },
    "source": {
      "type": "string",
      "description": "CloudEvents source of the events the gateway emits for this backend. Default: urn:proto-gateway:{id}.",
      "minLength": 1
    },
    "circuit": {
      "type": "object",
      "description": "Circuit breaker in front of the backend.",
      "additionalProperties": false,
      "properties": {
        "failures": {
          "type": "integer",
          "description": "Consecutive failures that open the circuit. Default 5; 0 disables the breaker.",
          "minimum": 0,
          "default": 5
        },
        "cooldown": {
          "$ref": "#/definitions/duration",
          "description": "How long an open circuit refuses calls before one trial call. Default 30s.",
          "default": "30s"
        }
      }
    },
    "headers": {
      "type": "object",
      "description": "Headers added to every request to this backend (${VAR} allowed). Default none.",
      "additionalProperties": {
        "type": "string"
      },
      "propertyNames": {
        "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
      },
      "default": {}
    },
    "access": {
      "$ref": "#/definitions/access"
    },
    "forwardIdentity": {
      "type": "string",
      "enum": ["none", "header", "token"],
      "default": "none",
      "description": "What the backend learns of the caller. none (default): nothing. header: X-Proto-Principal (the principal id; percent-encoded outside printable ASCII) and X-Proto-Scopes (space-separated gateway scopes; commands carry only the principal recorded at accept time), and any such header the caller sent is removed. token: queries and pass-through carry the caller's verified bearer token as Authorization (for backends that verify it themselves); commands, dispatched later from the outbox, carry X-Proto-Principal instead (a token may have expired by then), as do callers that used an API key."
    },
  };
}
