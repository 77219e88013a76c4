//! The pure half of creating and changing a machine: a request checked
//! against the caller's level and the platform, turned into what to write.
//! Nothing here reads the cluster or hashes a password.

use super::requests::{CreateVm, PatchVm, SizeInput};
use super::rules::{self, DEFAULT_CPU, DEFAULT_MEMORY, USER_LEVEL_CPU, USER_LEVEL_DISK, USER_LEVEL_MEMORY};
use crate::api::error::{ApiError, ApiResult};
use crate::api::validate;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::api::{
    AccessLevel, KitePlatform, KitePlatformSpec, KiteVirtualMachine, KiteVirtualMachineSpec, PowerState,
};

/// A machine to create, checked: its name and its spec, without the password hash.
pub struct Planned {
    /// The machine's name.
    pub name: String,
    /// Its spec, without the password hash.
    pub spec: KiteVirtualMachineSpec,
}

/// A machine's size.
pub struct Size {
    /// Virtual CPUs.
    pub cpu: u32,
    /// Memory.
    pub memory: Quantity,
    /// Disk.
    pub disk: Quantity,
}

impl Planned {
    /// A running (unless `power` says otherwise) machine `name` of `image` and `size`.
    pub fn new(
        (name, domain_prefix): (String, Option<String>),
        ssh_id: &str,
        image: String,
        size: Size,
        power: Option<PowerState>,
    ) -> Self {
        Planned {
            name,
            spec: KiteVirtualMachineSpec {
                cpu: size.cpu,
                memory: size.memory,
                disk: size.disk,
                image,
                power_state: power.unwrap_or(PowerState::On),
                domain_prefix,
                ssh_id: ssh_id.to_string(),
                ssh_password_hash: None,
                console_password_hash: None,
                delete: false,
            },
        }
    }
}

/// The name, `sshId` and `domainPrefix` of a new machine, checked; a name is made up when none is given.
pub fn identity(
    name: Option<&str>,
    ssh_id: &str,
    domain_prefix: Option<&str>,
    password: &str,
) -> ApiResult<(String, Option<String>)> {
    let name = match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => {
            validate::object_name("name", name)?;
            name.to_string()
        }
        None => format!("vm-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
    };
    validate::ssh_id(ssh_id)?;
    let domain_prefix = domain_prefix.map(str::trim).filter(|p| !p.is_empty()).map(str::to_string);
    if let Some(prefix) = &domain_prefix {
        validate::domain_prefix(prefix)?;
    }
    validate::password("sshPassword", password)?;
    Ok((name, domain_prefix))
}

/// The machine `request` asks for, at the caller's `level`: level 1 gets the fixed size.
pub fn create(
    request: &CreateVm,
    level: AccessLevel,
    spec: &KitePlatformSpec,
    platform: Option<&KitePlatform>,
) -> ApiResult<Planned> {
    let identity =
        identity(request.name.as_deref(), &request.ssh_id, request.domain_prefix.as_deref(), &request.ssh_password)?;
    let (image, image_size) = rules::ready_image(request.image.as_deref(), spec, platform)?;
    let (cpu, memory, disk) = if level == AccessLevel::User {
        let fixed = format!(
            "your access level creates machines of {USER_LEVEL_CPU} CPUs, {USER_LEVEL_MEMORY} memory and a {USER_LEVEL_DISK} disk"
        );
        let cpu_ok = request.cpu.is_none_or(|c| c == USER_LEVEL_CPU);
        let memory_ok = request.memory.as_ref().is_none_or(|m| m.text() == USER_LEVEL_MEMORY);
        let disk_ok = request
            .disk
            .as_ref()
            .is_none_or(|d| validate::size("disk", &d.text()).is_ok_and(|q| q.0 == USER_LEVEL_DISK));
        if !(cpu_ok && memory_ok && disk_ok) {
            return Err(ApiError::forbidden(format!("{fixed}; leave the size out or ask a manager")));
        }
        (USER_LEVEL_CPU, Quantity(USER_LEVEL_MEMORY.into()), validate::disk(USER_LEVEL_DISK, Some(&image_size))?)
    } else {
        let cpu = validate::cpu(request.cpu.unwrap_or(DEFAULT_CPU))?;
        let memory =
            validate::size("memory", &request.memory.as_ref().map_or(DEFAULT_MEMORY.to_string(), SizeInput::text))?;
        let disk_text = request.disk.as_ref().map_or(USER_LEVEL_DISK.to_string(), SizeInput::text);
        (cpu, memory, validate::disk(&disk_text, Some(&image_size))?)
    };
    Ok(Planned::new(identity, &request.ssh_id, image, Size { cpu, memory, disk }, request.power_state))
}

/// What happens to a machine's `domainPrefix`.
#[derive(Debug, PartialEq, Eq)]
pub enum PrefixChange {
    /// It stays as it is.
    Keep,
    /// It becomes this (checked) prefix, which must be reserved first.
    Set(String),
    /// It is removed.
    Clear,
}

/// A checked change of a machine: the spec fields to merge, and what needs
/// work before they can be written.
#[derive(Debug)]
pub struct Change {
    /// Spec fields to merge, in their JSON form (no password hash yet).
    pub spec: serde_json::Map<String, serde_json::Value>,
    /// A new SSH password, to hash into `sshPasswordHash`.
    pub password: Option<String>,
    /// The `domainPrefix`.
    pub prefix: PrefixChange,
}

impl Change {
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.spec.is_empty() && self.password.is_none() && self.prefix == PrefixChange::Keep
    }
}

/// Checks `request` against `vm` and the caller's `level` (the size only from level 2).
pub fn change(vm: &KiteVirtualMachine, level: AccessLevel, request: PatchVm) -> ApiResult<Change> {
    if request.image.as_ref().is_some_and(|i| *i != vm.spec.image) {
        return Err(ApiError::invalid("image", "cannot be changed; create a new machine instead"));
    }
    if request.ssh_id.as_ref().is_some_and(|s| *s != vm.spec.ssh_id) {
        return Err(ApiError::invalid("sshId", "cannot be changed; create a new machine instead"));
    }
    if vm.spec.delete {
        return Err(ApiError::conflict("this machine is being deleted"));
    }
    let resizing = request.cpu.is_some() || request.memory.is_some() || request.disk.is_some();
    if resizing && level < AccessLevel::Manager {
        return Err(ApiError::forbidden(format!(
            "your access level has a fixed machine size ({USER_LEVEL_CPU} CPUs, {USER_LEVEL_MEMORY}, {USER_LEVEL_DISK}); ask a manager to resize it"
        )));
    }
    let mut spec = serde_json::Map::new();
    if let Some(cpu) = request.cpu {
        spec.insert("cpu".into(), validate::cpu(cpu)?.into());
    }
    if let Some(memory) = &request.memory {
        spec.insert("memory".into(), validate::size("memory", &memory.text())?.0.into());
    }
    if let Some(disk) = &request.disk {
        let disk = validate::disk(&disk.text(), None)?;
        if kite_core::quantity::bytes(&disk) < kite_core::quantity::bytes(&vm.spec.disk) {
            return Err(ApiError::invalid("disk", format!("can grow but cannot shrink below {}", vm.spec.disk.0)));
        }
        spec.insert("disk".into(), disk.0.into());
    }
    if let Some(power) = request.power_state {
        spec.insert("powerState".into(), serde_json::to_value(power).unwrap_or_default());
    }
    if let Some(password) = &request.ssh_password {
        validate::password("sshPassword", password)?;
    }
    let current = vm.spec.domain_prefix.as_deref().unwrap_or("");
    let prefix = match request.domain_prefix.as_deref().map(str::trim) {
        None => PrefixChange::Keep,
        Some(prefix) if prefix == current => PrefixChange::Keep,
        Some("") => PrefixChange::Clear,
        Some(prefix) => {
            validate::domain_prefix(prefix)?;
            PrefixChange::Set(prefix.to_string())
        }
    };
    Ok(Change { spec, password: request.ssh_password, prefix })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kite_testkit::fixtures::a_vm;

    /// A machine with 2 CPUs, 4Gi and a 25Gi disk, and this prefix.
    fn machine(prefix: Option<&str>) -> KiteVirtualMachine {
        let vm = a_vm("web").sized(2, "4Gi").with_disk("25Gi");
        match prefix {
            Some(prefix) => vm.with_domain_prefix(prefix),
            None => vm.without_domain_prefix(),
        }
        .build()
    }

    #[test]
    fn the_same_prefix_is_no_change_and_an_empty_one_clears_it() {
        let same = PatchVm { domain_prefix: Some(" web ".into()), ..PatchVm::default() };
        assert!(change(&machine(Some("web")), AccessLevel::User, same).is_ok_and(|c| c.is_empty()));
        let cleared = PatchVm { domain_prefix: Some(String::new()), ..PatchVm::default() };
        assert_eq!(
            change(&machine(Some("web")), AccessLevel::User, cleared).map(|c| c.prefix).ok(),
            Some(PrefixChange::Clear)
        );
        let none = PatchVm { domain_prefix: Some(String::new()), ..PatchVm::default() };
        assert!(
            change(&machine(None), AccessLevel::User, none).is_ok_and(|c| c.is_empty()),
            "clearing nothing is no change"
        );
        let new = PatchVm { domain_prefix: Some("blog".into()), ..PatchVm::default() };
        assert_eq!(
            change(&machine(Some("web")), AccessLevel::User, new).map(|c| c.prefix).ok(),
            Some(PrefixChange::Set("blog".into()))
        );
    }

    #[test]
    fn only_managers_resize_and_disks_only_grow() {
        let grow = || PatchVm { disk: Some(SizeInput::Quantity("30Gi".into())), ..PatchVm::default() };
        let refused = change(&machine(None), AccessLevel::User, grow()).err().map(|e| e.status().as_u16());
        assert_eq!(refused, Some(403));
        assert!(change(&machine(None), AccessLevel::Manager, grow()).is_ok_and(|c| c.spec.contains_key("disk")));
        let shrink = PatchVm { disk: Some(SizeInput::Quantity("20Gi".into())), ..PatchVm::default() };
        let refused = change(&machine(None), AccessLevel::Manager, shrink).err().map(|e| e.status().as_u16());
        assert_eq!(refused, Some(422));
    }
}
