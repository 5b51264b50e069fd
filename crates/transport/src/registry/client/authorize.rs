//! The auth handshake: credentials, Bearer tokens, answering `401` challenges.

use std::time::Instant;

use super::{Client, Endpoint, RegistryAuth, RegistryError};
use crate::registry::auth::{self, Challenge, FoundCredential, Scopes, Secret};

impl Client {
    fn credential(
        &self,
        ep: &Endpoint,
        state: &mut RegistryAuth,
    ) -> Result<Option<FoundCredential>, RegistryError> {
        if state.credential.is_none() {
            let found = match &self.config.creds {
                // `--creds`: the login for every registry, no file consulted.
                Some(c) => Some(FoundCredential {
                    credential: c.clone(),
                    source: "--creds".into(),
                }),
                None => {
                    auth::lookup_credentials(&self.config.auth_env, &ep.registry, &ep.repository)
                        .map_err(|source| RegistryError::Auth {
                            registry: ep.registry.clone(),
                            repository: ep.repository.clone(),
                            source: Box::new(source),
                            hint: "fix the credentials configuration".into(),
                        })?
                }
            };
            state.credential = Some(found);
        }
        Ok(state.credential.clone().flatten())
    }

    pub(super) fn login_hint(&self, ep: &Endpoint, cred: Option<&FoundCredential>) -> String {
        match cred {
            None => format!(
                "no credentials for {0}: log in with `podman login {0}` (or `docker login {0}`), or set REGISTRY_AUTH_FILE to an auth.json that has them",
                ep.registry
            ),
            Some(f) => format!(
                "the credentials for {} from {} were refused or lack access to {}: log in again, or check the account's permissions",
                ep.registry, f.source, ep.repository
            ),
        }
    }

    fn token(
        &self,
        ep: &Endpoint,
        state: &mut RegistryAuth,
        realm: &str,
        service: Option<&str>,
        wanted: &Scopes,
    ) -> Result<Secret, RegistryError> {
        let now = Instant::now();
        if let Some(t) = state.tokens.get(wanted, now) {
            return Ok(t.value.clone());
        }
        let scopes = state.tokens.scopes_to_request(wanted, now);
        let cred = self.credential(ep, state)?;
        let http = self.http(&ep.registry)?;
        let token = auth::fetch_token(
            &http,
            realm,
            service,
            &scopes,
            cred.as_ref().map(|f| &f.credential),
            self.config.timeout,
        )
        .map_err(|source| {
            let hint = self.login_hint(ep, cred.as_ref());
            RegistryError::Auth {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                source: Box::new(source),
                hint,
            }
        })?;
        let value = token.value.clone();
        state.tokens.insert(token, Instant::now());
        Ok(value)
    }

    /// The `Authorization` value for a request to `ep`'s origin, from what the registry asked.
    pub(super) fn authorization(
        &self,
        ep: &Endpoint,
        scopes: &Scopes,
    ) -> Result<Option<Secret>, RegistryError> {
        let mut map = self
            .auth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = map.entry(ep.registry.clone()).or_default();
        match state.challenge.clone() {
            None => Ok(None),
            Some(Challenge::Basic { .. }) => Ok(self
                .credential(ep, state)?
                .and_then(|f| f.credential.basic_header())),
            Some(Challenge::Bearer { realm, service, .. }) => {
                let token = self.token(ep, state, &realm, service.as_deref(), scopes)?;
                Ok(Some(Secret::new(format!("Bearer {}", token.expose()))))
            }
        }
    }

    /// React to a 401: remember the challenge, get a token for the (merged) scopes. False when
    /// there is nothing new to try.
    pub(super) fn answer_challenge(
        &self,
        ep: &Endpoint,
        scopes: &Scopes,
        header: Option<&str>,
    ) -> Result<bool, RegistryError> {
        let Some(header) = header else {
            return Ok(false);
        };
        let challenges = auth::parse_challenges(header).map_err(|source| RegistryError::Auth {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            source: Box::new(source),
            hint: "the registry's authentication is not supported".into(),
        })?;
        let bearer = challenges
            .iter()
            .find(|c| matches!(c, Challenge::Bearer { .. }));
        let chosen = bearer.or_else(|| challenges.first()).cloned();
        let mut map = self
            .auth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = map.entry(ep.registry.clone()).or_default();
        match chosen {
            None => Ok(false),
            Some(Challenge::Basic { realm }) => {
                let had_basic = matches!(state.challenge, Some(Challenge::Basic { .. }));
                state.challenge = Some(Challenge::Basic { realm });
                // Credentials already sent and refused, or none to send: nothing new.
                Ok(!had_basic && self.credential(ep, state)?.is_some())
            }
            Some(Challenge::Bearer {
                realm,
                service,
                scope,
                error,
            }) => {
                let mut wanted = scopes.clone();
                if let Some(s) = &scope {
                    wanted.merge(&Scopes::parse(s));
                }
                let now = Instant::now();
                let had_token = state.tokens.get(&wanted, now).is_some();
                if had_token || error.as_deref() == Some("invalid_token") {
                    // The registry refused a token that should have done: start afresh.
                    state.tokens.clear();
                }
                state.challenge = Some(Challenge::Bearer {
                    realm: realm.clone(),
                    service: service.clone(),
                    scope: None,
                    error: None,
                });
                self.token(ep, state, &realm, service.as_deref(), &wanted)?;
                Ok(true)
            }
        }
    }
}
