//! The requests of an HTTP/3 run: HTTP/1.1 request bytes (as the
//! [`crate::source::RequestSource`] makes them for every protocol) made into a request
//! stream's bytes by `loadmark_wire::http3::request`; fixed requests prepared once per
//! worker, templated ones each time.

use std::cell::RefCell;
use std::rc::Rc;

use crate::connection::Shared;
use crate::source::Picked;
use crate::transport::Transport;

pub(crate) use loadmark_wire::http3::request::{prepare, Prepared};

/// Fixed requests, prepared once, by the address of their HTTP/1.1 bytes (which the source
/// keeps for the whole run).
#[derive(Default)]
pub(crate) struct Fixed(RefCell<Vec<(usize, Rc<Prepared>)>>);

impl Fixed {
    pub(crate) fn pick<T: Transport>(
        &self,
        shared: &Shared<T>,
        global: Option<u64>,
        rendered: &mut Vec<u8>,
    ) -> Result<Rc<Prepared>, String> {
        match shared.source.next(global, rendered) {
            // Scripts are refused with --http3 when the plan is validated.
            Picked::Failed(message) => Err(message),
            Picked::Fixed(bytes, _) => {
                let key = bytes.as_ptr() as usize;
                let mut fixed = self.0.borrow_mut();
                if let Some((_, p)) = fixed.iter().find(|(k, _)| *k == key) {
                    return Ok(p.clone());
                }
                let p = Rc::new(prepare(bytes)?);
                fixed.push((key, p.clone()));
                Ok(p)
            }
            Picked::Rendered(_) => prepare(rendered).map(Rc::new),
        }
    }
}
