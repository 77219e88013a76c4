//! Compiles the Kubernetes `.proto` files in `protos/` into one encoded
//! `FileDescriptorSet` (`$OUT_DIR/kubernetes-protos.bin`), which the fake
//! API server reads protobuf bodies with. protox is a pure-Rust compiler, so
//! no `protoc` is needed.

use std::path::{Path, PathBuf};

fn protos(dir: &Path, root: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            protos(&path, root, found)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            found.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new("protos");
    println!("cargo:rerun-if-changed=protos");
    let mut files = Vec::new();
    protos(root, root, &mut files)?;
    files.sort();
    let mut compiler = protox::Compiler::new([root])?;
    compiler.include_imports(true).include_source_info(false).open_files(&files)?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("kubernetes-protos.bin");
    std::fs::write(out, compiler.encode_file_descriptor_set())?;
    Ok(())
}
