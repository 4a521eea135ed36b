import { describe, expect, it } from 'vitest';
import { loopDeviceName, mountsAt, parseMountInfo } from './quota-mounts.js';

const MOUNT_INFO = [
  '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard',
  '40 22 7:3 / /srv/ws/ws_1 rw,nosuid,nodev,relatime shared:20 - ext4 /dev/loop3 rw,discard',
  '41 22 7:4 / /srv/ws/with\\040space rw,relatime - ext4 /dev/loop4 rw',
  '42 40 0:55 / /srv/ws/ws_1 rw,relatime shared:21 master:3 - tmpfs tmpfs rw,size=1024k',
  '43 22 254:0 /srv/elsewhere /srv/ws/ws_2 rw,relatime shared:1 - ext4 /dev/vda rw',
  'garbage line',
  '',
].join('\n');

describe('parseMountInfo', () => {
  it('reads every field it needs, whatever the number of optional fields', () => {
    expect(parseMountInfo(MOUNT_INFO)[1]).toEqual({
      mountId: 40,
      parentId: 22,
      device: '7:3',
      root: '/',
      mountPoint: '/srv/ws/ws_1',
      fsType: 'ext4',
      source: '/dev/loop3',
    });
    expect(parseMountInfo(MOUNT_INFO)[3]).toMatchObject({
      mountPoint: '/srv/ws/ws_1',
      fsType: 'tmpfs',
      source: 'tmpfs',
    });
  });

  it('undoes the octal escapes of spaces and the like', () => {
    expect(parseMountInfo(MOUNT_INFO)[2]?.mountPoint).toBe('/srv/ws/with space');
  });

  it('leaves out lines that are not mounts', () => {
    expect(parseMountInfo(MOUNT_INFO)).toHaveLength(5);
  });
});

describe('mountsAt', () => {
  it('lists the mounts at exactly that path, bottom first', () => {
    expect(mountsAt(MOUNT_INFO, '/srv/ws/ws_1').map((entry) => entry.mountId)).toEqual([40, 42]);
    expect(mountsAt(MOUNT_INFO, '/srv/ws/ws_1/below')).toEqual([]);
    expect(mountsAt(MOUNT_INFO, '/srv/ws')).toEqual([]);
  });

  it('shows a bind of a subdirectory by its root', () => {
    expect(mountsAt(MOUNT_INFO, '/srv/ws/ws_2')[0]?.root).toBe('/srv/elsewhere');
  });
});

describe('loopDeviceName', () => {
  it('names loop devices only', () => {
    expect(loopDeviceName('/dev/loop3')).toBe('loop3');
    expect(loopDeviceName('/dev/loop-control')).toBeUndefined();
    expect(loopDeviceName('/dev/vda')).toBeUndefined();
    expect(loopDeviceName('tmpfs')).toBeUndefined();
  });
});
