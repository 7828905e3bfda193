// The one function the suites use from k6's jslib (https://jslib.k6.io/k6-utils/1.4.0/), which
// k6 downloads at run time; typed here so the scripts type-check offline.
export function uuidv4(secure?: boolean): string;
