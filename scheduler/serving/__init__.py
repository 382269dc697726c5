"""Secure serving of health, metrics and debug endpoints: HTTPS, delegated authentication and
authorization, as kube-scheduler's (k8s.io/apiserver's SecureServingOptions and delegating options)."""
