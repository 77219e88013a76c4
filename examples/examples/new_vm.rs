//! Builds a `KiteVirtualMachine` with kite-core's types and prints it as YAML.
//!
//! ```text
//! cargo run -p kite-examples --example new_vm -- alice-web | kubectl apply -f -
//! ```

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::api::{KiteVirtualMachine, KiteVirtualMachineSpec, PowerState};
use kite_core::ssh_id::{SSH_ID_PATTERN, is_valid_ssh_id};
use std::process::ExitCode;

fn main() -> ExitCode {
    let ssh_id = std::env::args().nth(1).unwrap_or_else(|| "alice-web".to_string());
    if !is_valid_ssh_id(&ssh_id) {
        eprintln!("{ssh_id:?} is not a valid sshId: it must match {SSH_ID_PATTERN}");
        return ExitCode::FAILURE;
    }
    let mut vm = KiteVirtualMachine::new(
        &ssh_id,
        KiteVirtualMachineSpec {
            cpu: 2,
            memory: Quantity("4Gi".into()),
            disk: Quantity("25Gi".into()),
            image: "ubuntu-22.04".into(),
            power_state: PowerState::On,
            domain_prefix: None,
            ssh_id: ssh_id.clone(),
            ssh_password_hash: None,
            console_password_hash: None,
            delete: false,
        },
    );
    vm.metadata.namespace = Some("default".into());
    match serde_saphyr::to_string(&vm) {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("could not render the VM as YAML: {error}");
            ExitCode::FAILURE
        }
    }
}
