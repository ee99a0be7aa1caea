/**
 * Webhook subscriptions over HTTP (PROTOCOL.md 4.5, 4.6): `POST /subscriptions` → 201 with the
 * descriptor, `GET /subscriptions` (the caller's own), `GET /subscriptions/{id}`,
 * `DELETE /subscriptions/{id}` → 204, `GET /subscriptions/{id}/deliveries?status=&limit=&after=`
 * (dead letters and the rest), and `POST /subscriptions/{id}/deliveries/{deliveryId}/retry` → 202
 * (a dead or succeeded delivery is due again). Scopes follow the method: `write` for POST and DELETE, `read` for
 * GETs. A secret is in an answer only once, when the gateway generated it (creation, rotation).
 *
 * Operations (issue 28): `POST /subscriptions/{id}/enable` `{ recover? }` → 200 with the descriptor,
 * `POST /subscriptions/{id}/recover` `{ since, until? }` → 202 with the recovery (409 while one
 * runs), `GET /subscriptions/{id}/recoveries/{recoveryId}`,
 * `POST /subscriptions/{id}/events/{eventId}/resend` → 202 with the delivery, and
 * `POST /subscriptions/{id}/secret/rotate` `{ secret?, overlap? }` → 200.
 */
import type { RequestContext } from '../../http/route.ts';
import { ProtoError } from '../../errors.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from './DeliveryQueue.ts';
import { parseEnableRequest, parseRecoveryRequest, parseRotationRequest, parseSubscriptionRequest } from './subscription-request.ts';
import type { Subscriptions } from './subscriptions.ts';
import { positiveInteger, text } from '../../http/params.ts';
import type { Route } from '../../http/route.ts';

/** Page size of `GET /subscriptions/{id}/deliveries`: default and ceiling. */
export const DELIVERY_PAGE = { default: 100, max: 1000 };

/** The routes of webhook subscriptions. */
export function subscriptionRoutes(subscriptions: Subscriptions): Route[] {
  return [
    {
      method: 'POST',
      path: '/subscriptions',
      handle: async (ctx) => {
        const descriptor = await subscriptions.create(ctx.principal, parseSubscriptionRequest(await ctx.json()));
        ctx.log.info({ subscription: descriptor.id, serviceId: descriptor.serviceId }, 'webhook subscription created');
        return { status: 201, body: descriptor };
      },
    },
    { method: 'GET', path: '/subscriptions', handle: async (ctx) => ({ status: 200, body: { subscriptions: await subscriptions.list(ctx.principal.id) } }) },
    { method: 'GET', path: '/subscriptions/:id', handle: async (ctx) => ({ status: 200, body: await subscriptions.get(ctx.principal.id, ctx.params.id) }) },
    {
      method: 'DELETE',
      path: '/subscriptions/:id',
      handle: async (ctx) => {
        await subscriptions.delete(ctx.principal.id, ctx.params.id);
        ctx.log.info({ subscription: ctx.params.id }, 'webhook subscription deleted');
        return { status: 204 };
      },
    },
    {
      method: 'GET',
      path: '/subscriptions/:id/deliveries',
      handle: async (ctx) => {
        const page = await subscriptions.deliveries(ctx.principal.id, ctx.params.id, {
          status: statusOf(ctx.query),
          after: cursorOf(ctx.query),
          limit: Math.min(positiveInteger(ctx.query, 'limit', DELIVERY_PAGE.default), DELIVERY_PAGE.max),
        });
        const body = { deliveries: page.deliveries, ...(page.next === undefined ? {} : { nextCursor: String(page.next) }) };
        return { status: 200, body };
      },
    },
    {
      method: 'POST',
      path: '/subscriptions/:id/deliveries/:deliveryId/retry',
      handle: async (ctx) => {
        const delivery = await subscriptions.redeliver(ctx.principal.id, ctx.params.id, ctx.params.deliveryId);
        ctx.log.info({ subscription: ctx.params.id, delivery: delivery.id }, 'webhook delivery retried on request');
        return { status: 202, body: delivery };
      },
    },
    {
      method: 'POST',
      path: '/subscriptions/:id/enable',
      handle: async (ctx) => {
        const descriptor = await subscriptions.enable(ctx.principal.id, ctx.params.id, parseEnableRequest(await optionalJson(ctx)));
        ctx.log.info({ subscription: ctx.params.id, recovery: descriptor.recovery?.id }, 'webhook subscription enabled on request');
        return { status: 200, body: descriptor };
      },
    },
    {
      method: 'POST',
      path: '/subscriptions/:id/recover',
      handle: async (ctx) => {
        const recovery = await subscriptions.recover(ctx.principal.id, ctx.params.id, parseRecoveryRequest(await ctx.json()));
        ctx.log.info({ subscription: ctx.params.id, recovery: recovery.id, since: recovery.since, until: recovery.until }, 'webhook recovery started');
        return { status: 202, body: recovery };
      },
    },
    {
      method: 'GET',
      path: '/subscriptions/:id/recoveries/:recoveryId',
      handle: async (ctx) => ({ status: 200, body: await subscriptions.recovery(ctx.principal.id, ctx.params.id, ctx.params.recoveryId) }),
    },
    {
      method: 'POST',
      path: '/subscriptions/:id/events/:eventId/resend',
      handle: async (ctx) => {
        const delivery = await subscriptions.resend(ctx.principal.id, ctx.params.id, ctx.params.eventId);
        ctx.log.info({ subscription: ctx.params.id, event: ctx.params.eventId, delivery: delivery.id }, 'webhook event resent on request');
        return { status: 202, body: delivery };
      },
    },
    {
      method: 'POST',
      path: '/subscriptions/:id/secret/rotate',
      handle: async (ctx) => {
        const rotated = await subscriptions.rotateSecret(ctx.principal.id, ctx.params.id, parseRotationRequest(await optionalJson(ctx)));
        ctx.log.info({ subscription: ctx.params.id, previousSecretExpiresAt: rotated.previousSecretExpiresAt }, 'webhook secret rotated');
        return { status: 200, body: rotated };
      },
    },
  ];
}

/** The JSON body, or undefined when the request has none (no `Content-Length` above 0, no chunked body). */
async function optionalJson(ctx: RequestContext): Promise<unknown> {
  const { headers } = ctx.req;
  const length = headers['content-length'];
  if (headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return undefined;
  return ctx.json();
}

function statusOf(query: URLSearchParams): DeliveryStatus | undefined {
  const status = text(query, 'status');
  if (status !== undefined && !DELIVERY_STATUSES.includes(status as DeliveryStatus)) {
    throw new ProtoError('INVALID_PARAMETER', `status must be one of ${DELIVERY_STATUSES.join(', ')}`, { parameter: 'status', value: status });
  }
  return status as DeliveryStatus | undefined;
}

/** `after` is the `nextCursor` of the previous page: an enqueue sequence number. */
function cursorOf(query: URLSearchParams): number {
  const after = text(query, 'after');
  if (after === undefined) return 0;
  if (!/^\d{1,15}$/.test(after)) throw new ProtoError('INVALID_CURSOR', 'after is not a cursor of this endpoint', { parameter: 'after' });
  return Number(after);
}
