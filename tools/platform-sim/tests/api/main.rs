//! One integration-test binary: the simulator and a receiver on real sockets,
//! real tokio, no mocks. One file per behaviour.

mod alipay;
mod bills;
mod chaos;
mod delivery;
mod helpers;
mod payments;
mod query_and_close;
mod refunds;
mod wechatpay;
