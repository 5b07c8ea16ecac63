#!/bin/sh
# plant.sh: turn the working copy into a set of escape routes for apply.
cd /workspace || exit 1
ln -s /etc/passwd planted-link
rm -f victim.txt && ln -s /etc/passwd victim.txt
ln -s /etc etc-link
ln -s .. up-link
mkdir -p deep && ln -s /root deep/root-link
printf 'pwned\n' >"$(printf 'nl\n..')"
printf 'pwned\n' >"...pwn"
printf 'changed\n' >"a..b"
echo "planted:"; ls -la /workspace | tail -n +4
