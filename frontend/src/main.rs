//! Entry point of the payment page's WebAssembly module: mounts [`frontend::App`].

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(frontend::App);
}
