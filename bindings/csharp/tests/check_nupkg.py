#!/usr/bin/env python3
"""What the DLBridge package holds, for tests/package_test.sh.

usage:
  check_nupkg.py contents NUPKG INSTALLED LICENSE VERSION
      NUPKG is the file `ninja -C build csharp-nupkg` made, INSTALLED the folder nuget installed
      it into (packages/DLBridge.VERSION), LICENSE the repository's. Checks the files (exactly
      the expected ones), the license text, the nuspec's metadata and the XML documentation.
  check_nupkg.py readme README PROGRAM EXPECTED
      Writes the README's csharp block to PROGRAM, and to EXPECTED the output it promises: the
      trailing `// text` comment of each Console.WriteLine line, in order.
Exit status 1 with a message on the first thing that is wrong.
"""
import filecmp
import os
import re
import sys
import xml.etree.ElementTree as ET
import zipfile

NS = {'n': 'http://schemas.microsoft.com/packaging/2013/05/nuspec.xsd'}
FILES = ['LICENSE', 'README.md', 'lib/net45/DLBridge.dll', 'lib/net45/DLBridge.xml',
         'runtimes/linux-x64/native/libdlbridge_csharp.so']
OPC = ('_rels/', 'package/', '[Content_Types].xml')


def fail(message):
    sys.exit('check_nupkg.py: ' + message)


def contents(nupkg, installed, license_file, version):
    with zipfile.ZipFile(nupkg) as z:
        names = sorted(n for n in z.namelist() if not n.startswith(OPC))
        nuspec = z.read('DLBridge.nuspec')
    print('%s holds:' % os.path.basename(nupkg))
    for name in names:
        print('  ' + name)
    if names != sorted(FILES + ['DLBridge.nuspec']):
        fail('expected exactly %s' % ', '.join(sorted(FILES + ['DLBridge.nuspec'])))
    for name in FILES:
        if not os.path.isfile(os.path.join(installed, name)):
            fail('nuget did not install %s' % name)
    if not filecmp.cmp(os.path.join(installed, 'LICENSE'), license_file, shallow=False):
        fail('the package\'s LICENSE is not the repository\'s %s' % license_file)

    meta = ET.fromstring(nuspec).find('n:metadata', NS)
    if meta is None:
        fail('DLBridge.nuspec has no <metadata> in %s' % NS['n'])

    def get(name):
        element = meta.find('n:' + name, NS)
        if element is None:
            fail('the nuspec has no <%s>' % name)
        return element
    expect = {'id': 'DLBridge', 'version': version, 'license': 'Apache-2.0',
              'licenseUrl': 'https://licenses.nuget.org/Apache-2.0', 'readme': 'README.md'}
    for name, value in expect.items():
        if (get(name).text or '').strip() != value:
            fail('<%s> is %r, expected %r' % (name, get(name).text, value))
    if get('license').get('type') != 'expression':
        fail('<license type="expression"> expected')
    repository = get('repository')
    if repository.get('type') != 'git' or not repository.get('url', '').startswith('https://'):
        fail('<repository type="git" url="https://..."> expected')
    for name in ['description', 'authors', 'projectUrl', 'tags']:
        if not (get(name).text or '').strip():
            fail('<%s> is empty' % name)
    if 'dlpack' not in get('tags').text.split():
        fail('<tags> should name dlpack')
    print('nuspec: id DLBridge %s, license %s (expression) + LICENSE, repository %s, readme %s, tags: %s'
          % (version, get('license').text, repository.get('url'), get('readme').text, get('tags').text))

    # The XML documentation: every public type the docs name is documented.
    doc = ET.parse(os.path.join(installed, 'lib/net45/DLBridge.xml')).getroot()
    members = {m.get('name'): m for m in doc.iter('member')}
    for needed in ['T:DLBridge.Tensor', 'T:DLBridge.DType', 'T:DLBridge.Device', 'T:DLBridge.DLBridge',
                   'T:DLBridge.Status', 'F:DLBridge.Status.InvalidArgument', 'P:DLBridge.Tensor.Shape',
                   'P:DLBridge.DLBridge.Version']:
        member = members.get(needed)
        if member is None or not ''.join(member.itertext()).strip():
            fail('lib/net45/DLBridge.xml does not document %s' % needed)
    print('DLBridge.xml: %d documented members' % len(members))


def readme(readme_file, program, expected):
    with open(readme_file) as f:
        text = f.read()
    blocks = re.findall(r'^```csharp\n(.*?)^```', text, re.S | re.M)
    if len(blocks) != 1:
        fail('%s: expected one csharp block, found %d' % (readme_file, len(blocks)))
    lines = [m.group(1).strip() for m in
             (re.search(r'Console\.WriteLine\(.*//\s*(.*)$', l) for l in blocks[0].splitlines()) if m]
    if not lines:
        fail('%s: no Console.WriteLine line says its output in a // comment' % readme_file)
    with open(program, 'w') as f:
        f.write(blocks[0])
    with open(expected, 'w') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    if len(sys.argv) == 6 and sys.argv[1] == 'contents':
        contents(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == 'readme':
        readme(*sys.argv[2:])
    else:
        fail(__doc__)
