// Package share splits a capacity among tenants so that one tenant's use
// cannot take what another is guaranteed.
//
// A Pool of capacity C is given a reserved fraction r and a weight per
// tenant. Tenant i is guaranteed g_i = r·C·w_i/Σw: no other tenant can
// ever hold any of it. The rest, C − Σg_i, is the shared remainder: any
// tenant may borrow from it, first come first served, once its own
// guarantee is used up. Borrowed capacity comes back when the borrower
// gives it back (a request ends, a spooled record is published); a tenant
// that needs its guarantee finds it free however much the others hold.
//
// With one tenant and any r the tenant may hold all of C, as if there were
// no pool. A name the pool was not built with is a tenant without a
// guarantee: it borrows from the remainder only.
//
// A Pool is safe for concurrent use. It is only an account: it holds
// nothing and never blocks, except Take, which waits for room until its
// context ends.
package share
