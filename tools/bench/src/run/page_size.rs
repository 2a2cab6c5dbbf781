//! The page-size step: the release `.wasm` that `scripts/build-frontend.sh`
//! left in `dist/`, raw and gzipped.
//!
//! Nothing is built here: a missing build is a note in the report, not a
//! failed run, because the server-side figures stand without it.

use super::{Bench, say};
use crate::machine;

impl Bench {
    pub(super) fn step_size(&mut self) -> anyhow::Result<()> {
        say("==> Page size");
        self.results.wasm = machine::wasm_size(&self.root)?;
        match &self.results.wasm {
            Some(wasm) => say(format!(
                "    {}: {:.1} KiB raw, {:.1} KiB gzip -9",
                wasm.file,
                wasm.raw_bytes as f64 / 1024.0,
                wasm.gzip_bytes as f64 / 1024.0
            )),
            None => {
                say("    no dist/*.wasm: run `bash scripts/build-frontend.sh` first");
                self.results
                    .notes
                    .push("no dist/*.wasm was found; the page size was not measured".into());
            }
        }
        Ok(())
    }
}
