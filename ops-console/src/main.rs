//! Entry point of the operator console's WebAssembly module: mounts [`ops_console::App`].

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(ops_console::App);
}
