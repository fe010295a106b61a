//! A [`kube::Client`] from a kubeconfig file, or inferred (`$KUBECONFIG`,
//! `~/.kube/config`, or the pod's service account in a cluster).

use std::path::Path;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::error::KubeError;

/// Connects with `kubeconfig` if given, else as `kube::Client::try_default`
/// does.
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, KubeError> {
    let config = match kubeconfig {
        Some(path) => {
            let err = |message: String| KubeError::Kubeconfig {
                path: path.display().to_string(),
                message,
            };
            let file = Kubeconfig::read_from(path).map_err(|e| err(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                .await
                .map_err(|e| err(e.to_string()))?
        }
        None => kube::Config::infer().await.map_err(|e| KubeError::Kubeconfig {
            path: "<in-cluster / $KUBECONFIG>".into(),
            message: e.to_string(),
        })?,
    };
    Client::try_from(config).map_err(|e| KubeError::Kubeconfig {
        path: kubeconfig.map_or_else(|| "<inferred>".into(), |p| p.display().to_string()),
        message: e.to_string(),
    })
}
