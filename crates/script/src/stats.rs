//! The statistics objects `done()` receives, backed by loadmark's own HDR histograms (wrk
//! keeps its own array of counts; the figures mean the same: microseconds for latency,
//! requests per second for the request rate).

use hdrhistogram::Histogram;
use mlua::{AnyUserData, Lua, MetaMethod, UserData, UserDataMethods, Value};

pub(crate) struct Stats(pub Histogram<u64>);

impl Stats {
    fn field(&self, lua: &Lua, key: &str) -> mlua::Result<Value> {
        let h = &self.0;
        let empty = h.is_empty();
        let number = |n: f64| Ok(Value::Number(if empty { 0.0 } else { n }));
        match key {
            "min" => number(h.min() as f64),
            "max" => number(h.max() as f64),
            "mean" => number(h.mean()),
            "stdev" => number(h.stdev()),
            "percentile" => Ok(Value::Function(lua.create_function(
                |_, (this, p): (AnyUserData, f64)| {
                    let this = this.borrow::<Stats>()?;
                    Ok(if this.0.is_empty() {
                        0.0
                    } else {
                        this.0.value_at_quantile((p / 100.0).clamp(0.0, 1.0)) as f64
                    })
                },
            )?)),
            _ => Ok(Value::Nil),
        }
    }
}

impl UserData for Stats {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::Index, |lua, this, key: String| {
            this.field(lua, &key)
        });
        // latency(i): the i-th distinct value recorded and how many times (1-based, as wrk).
        methods.add_meta_method(MetaMethod::Call, |_, this, i: f64| {
            let wanted = (i as u64).max(1) - 1;
            Ok(this
                .0
                .iter_recorded()
                .nth(wanted as usize)
                .map_or((0.0, 0.0), |v| {
                    (v.value_iterated_to() as f64, v.count_at_value() as f64)
                }))
        });
        methods.add_meta_method(MetaMethod::Len, |_, this, ()| {
            Ok(this.0.iter_recorded().count())
        });
    }
}
