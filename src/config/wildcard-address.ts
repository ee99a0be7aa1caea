/**
 * Whether a listening host is a wildcard address ("every interface": `0.0.0.0`, `::` and their
 * other spellings), which is never an address to advertise to consumers.
 */
import ipaddr from 'ipaddr.js';

/** True for `0.0.0.0`, `::`, `[::]`, `0:0:0:0:0:0:0:0`…; false for names and other addresses. */
export function isWildcardAddress(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  return ipaddr.isValid(bare) && ipaddr.parse(bare).range() === 'unspecified';
}
